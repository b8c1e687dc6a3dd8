//! The route plan: the one ordered list of HTTP routes the server mounts.
//!
//! Channels compose by slot first; then their routes are planned here.
//! A route's identity is its method plus its path pattern with parameter
//! names erased (`GET /users/:_`). Among channels the first declaration of
//! an identity wins and later ones are kept as shadowed routes with a
//! warning; a source declaring one identity twice is an error. CORS
//! preflights are derived only from winning routes, and no route may overlap
//! the host's reserved routes.

use evoflux_core::{Diagnostic, Diagnostics};
use serde::{Deserialize, Serialize};

use crate::candidate::SourceId;
use crate::channel::{ChannelDefinition, Cors, Method, RouteAction};
use crate::slot::Slot;

/// A canonical route path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RoutePattern {
    /// Canonical path with parameter names, such as `/users/:id`.
    pub path: String,
    /// Parameter names erased, such as `/users/:_`.
    pub identity: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Static(String),
    Param,
}

impl RoutePattern {
    /// Canonicalizes a declared path, or says why it is not a valid pattern.
    pub fn parse(raw: &str) -> Result<RoutePattern, String> {
        if !raw.starts_with('/') {
            return Err("must start with `/`".to_owned());
        }
        if raw == "/" {
            return Ok(RoutePattern {
                path: "/".into(),
                identity: "/".into(),
            });
        }
        let trimmed = raw.strip_suffix('/').unwrap_or(raw);
        let mut path = String::new();
        let mut identity = String::new();
        for seg in trimmed[1..].split('/') {
            if seg.is_empty() || seg == "." || seg == ".." {
                return Err(format!("has an empty, `.` or `..` segment in `{raw}`"));
            }
            if let Some(name) = seg.strip_prefix(':') {
                let ok = !name.is_empty()
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                if !ok {
                    return Err(format!(
                        "parameter `{seg}` must be `:name` with letters, digits or `_` only \
                         (no wildcards, optionals or regexes)"
                    ));
                }
                path.push('/');
                path.push_str(seg);
                identity.push_str("/:_");
            } else {
                if seg.chars().any(|c| {
                    c.is_whitespace()
                        || c.is_control()
                        || matches!(
                            c,
                            ':' | '*' | '?' | '+' | '(' | ')' | '{' | '}' | '\\' | '#'
                        )
                }) {
                    return Err(format!(
                        "segment `{seg}` contains a character that is not allowed in a static \
                         segment (`:`, `*`, `?`, `+`, `(`, `)`, `{{`, `}}`, `\\`, `#`, whitespace)"
                    ));
                }
                path.push('/');
                path.push_str(seg);
                identity.push('/');
                identity.push_str(seg);
            }
        }
        Ok(RoutePattern { path, identity })
    }

    fn segments(&self) -> Vec<Segment> {
        if self.identity == "/" {
            return Vec::new();
        }
        self.identity[1..]
            .split('/')
            .map(|s| match s {
                ":_" => Segment::Param,
                other => Segment::Static(other.to_owned()),
            })
            .collect()
    }

    /// Whether some concrete request path matches both patterns.
    pub fn overlaps(&self, other: &RoutePattern) -> bool {
        let (a, b) = (self.segments(), other.segments());
        a.len() == b.len()
            && a.iter().zip(&b).all(|pair| match pair {
                (Segment::Static(x), Segment::Static(y)) => x == y,
                _ => true,
            })
    }
}

/// Reserved routes of the host, which no channel may overlap. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostRoute {
    /// Process readiness probe used by supervisors.
    Readiness,
    /// Schedule triggers.
    ScheduleTrigger,
    /// Fleet run continuations.
    FleetContinuation,
    /// The document viewer's listing of a session's workspace files: a
    /// product surface of the host, which no channel, tool or plugin
    /// reaches.
    ViewerFiles,
    /// The document viewer's rendering of one workspace document.
    ViewerDocument,
    /// A session's preview (a dev server of its `preview` tool), every
    /// method and every path below it; checked by the key in its path,
    /// which the token-checked `GET /api/sessions/:id/previews` hands out.
    PreviewProxy,
}

impl HostRoute {
    pub const ALL: [HostRoute; 6] = [
        HostRoute::Readiness,
        HostRoute::ScheduleTrigger,
        HostRoute::FleetContinuation,
        HostRoute::ViewerFiles,
        HostRoute::ViewerDocument,
        HostRoute::PreviewProxy,
    ];

    /// The reserved method (`None` = every method) and path.
    pub const fn route(self) -> (Option<Method>, &'static str) {
        match self {
            HostRoute::Readiness => (Some(Method::Get), "/.well-known/evoflux/ready"),
            HostRoute::ScheduleTrigger => (None, "/internal/schedules/:name"),
            HostRoute::FleetContinuation => (None, "/internal/fleets/:run/continue"),
            HostRoute::ViewerFiles => (Some(Method::Get), "/api/viewer/files"),
            HostRoute::ViewerDocument => (Some(Method::Get), "/api/viewer/document"),
            HostRoute::PreviewProxy => (None, "/api/sessions/:id/previews/:preview/:key"),
        }
    }
}

/// A route the server mounts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectiveRoute {
    pub method: Method,
    pub path: String,
    pub identity: String,
    pub source_id: SourceId,
    pub action: RouteAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cors: Option<Cors>,
}

/// A derived `OPTIONS` route answering CORS preflights.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preflight {
    pub path: String,
    pub identity: String,
    /// The routes that caused it, in order, without repeats.
    pub source_ids: Vec<SourceId>,
    pub cors: Cors,
}

/// A route that lost its identity to an earlier channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShadowedRoute {
    pub method: Method,
    pub path: String,
    pub source_id: SourceId,
    pub winner_source_id: SourceId,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RoutePlan {
    pub effective: Vec<EffectiveRoute>,
    pub preflights: Vec<Preflight>,
    pub shadowed: Vec<ShadowedRoute>,
}

fn route_diag(code: &'static str, source: &SourceId, msg: String) -> Diagnostic {
    Diagnostic::error(code, msg).with_source_id(source.as_str())
}

/// Plans the routes of the selected channels, given in composition order.
pub fn plan(
    channels: &[(SourceId, Slot, &ChannelDefinition)],
    diags: &mut Diagnostics,
) -> RoutePlan {
    let mut plan = RoutePlan::default();
    // (method, identity) -> index of the effective route that won it.
    let mut won: std::collections::HashMap<(Method, String), usize> =
        std::collections::HashMap::new();
    let reserved: Vec<(Option<Method>, RoutePattern)> = HostRoute::ALL
        .iter()
        .filter_map(|h| {
            let (m, p) = h.route();
            RoutePattern::parse(p).ok().map(|pat| (m, pat))
        })
        .collect();
    for (source_id, slot, channel) in channels {
        let mut own = std::collections::HashSet::new();
        for route in &channel.routes {
            let pattern = match RoutePattern::parse(&route.path) {
                Ok(p) => p,
                Err(why) => {
                    diags.push(
                        route_diag(
                            "compile/channel-route-invalid-pattern",
                            source_id,
                            format!("route `{} {}` {why}", route.method.as_str(), route.path),
                        )
                        .with_slot(slot.clone()),
                    );
                    continue;
                }
            };
            if let Some((_, host)) = reserved
                .iter()
                .find(|(m, host)| m.is_none_or(|m| m == route.method) && host.overlaps(&pattern))
            {
                diags.push(
                    route_diag(
                        "compile/reserved-route-collision",
                        source_id,
                        format!(
                            "route `{} {}` overlaps the reserved host route `{}`; choose another path",
                            route.method.as_str(),
                            pattern.path,
                            host.path
                        ),
                    )
                    .with_slot(slot.clone()),
                );
                continue;
            }
            let identity = format!("{} {}", route.method.as_str(), pattern.identity);
            if !own.insert(identity.clone()) {
                diags.push(
                    route_diag(
                        "compile/channel-route-duplicate",
                        source_id,
                        format!("this channel declares `{identity}` twice"),
                    )
                    .with_slot(slot.clone()),
                );
                continue;
            }
            if let Some(winner) = won
                .get(&(route.method, pattern.identity.clone()))
                .and_then(|i| plan.effective.get(*i))
            {
                diags.push(
                    Diagnostic::warning(
                        "compile/channel-route-shadowed",
                        format!(
                            "route `{} {}` is shadowed by the same route of `{}`, declared first",
                            route.method.as_str(),
                            pattern.path,
                            winner.source_id
                        ),
                    )
                    .with_source_id(source_id.as_str())
                    .with_slot(slot.clone()),
                );
                plan.shadowed.push(ShadowedRoute {
                    method: route.method,
                    path: pattern.path,
                    source_id: source_id.clone(),
                    winner_source_id: winner.source_id.clone(),
                });
                continue;
            }
            won.insert(
                (route.method, pattern.identity.clone()),
                plan.effective.len(),
            );
            plan.effective.push(EffectiveRoute {
                method: route.method,
                path: pattern.path,
                identity: pattern.identity,
                source_id: source_id.clone(),
                action: route.action.clone(),
                cors: route.cors.clone(),
            });
        }
    }
    derive_preflights(&mut plan, diags);
    plan
}

fn derive_preflights(plan: &mut RoutePlan, diags: &mut Diagnostics) {
    let pattern = |r: &EffectiveRoute| RoutePattern {
        path: r.path.clone(),
        identity: r.identity.clone(),
    };
    let causes: Vec<&EffectiveRoute> = plan
        .effective
        .iter()
        .filter(|r| r.cors.is_some() && r.method != Method::Options)
        .collect();
    // An explicit OPTIONS route would answer the preflight itself.
    for explicit in plan
        .effective
        .iter()
        .filter(|r| r.method == Method::Options)
    {
        if let Some(cause) = causes
            .iter()
            .find(|c| pattern(c).overlaps(&pattern(explicit)))
        {
            diags.push(route_diag(
                "compile/channel-preflight-collision",
                &explicit.source_id,
                format!(
                    "explicit `OPTIONS {}` overlaps `{} {}`, which needs a CORS preflight",
                    explicit.path,
                    cause.method.as_str(),
                    cause.path
                ),
            ));
        }
    }
    for (i, a) in causes.iter().enumerate() {
        for b in &causes[i + 1..] {
            if a.cors != b.cors && pattern(a).overlaps(&pattern(b)) {
                diags.push(route_diag(
                    "compile/channel-cors-conflict",
                    &b.source_id,
                    format!(
                        "`{} {}` and `{} {}` overlap but declare different CORS options",
                        a.method.as_str(),
                        a.path,
                        b.method.as_str(),
                        b.path
                    ),
                ));
            }
        }
    }
    let mut preflights: Vec<Preflight> = Vec::new();
    for cause in causes {
        let Some(cors) = &cause.cors else { continue };
        match preflights.iter_mut().find(|p| p.identity == cause.identity) {
            Some(p) => {
                if !p.source_ids.contains(&cause.source_id) {
                    p.source_ids.push(cause.source_id.clone());
                }
            }
            None => preflights.push(Preflight {
                path: cause.path.clone(),
                identity: cause.identity.clone(),
                source_ids: vec![cause.source_id.clone()],
                cors: cors.clone(),
            }),
        }
    }
    plan.preflights = preflights;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::{ApiEndpoint, CorsList, RouteDecl};

    fn route(method: Method, path: &str, cors: Option<Cors>) -> RouteDecl {
        RouteDecl {
            method,
            path: path.to_owned(),
            cors,
            action: RouteAction::Api {
                endpoint: ApiEndpoint::Health,
            },
        }
    }

    fn run(channels: Vec<(&str, Vec<RouteDecl>)>) -> (RoutePlan, Diagnostics) {
        let defs: Vec<(SourceId, Slot, ChannelDefinition)> = channels
            .into_iter()
            .map(|(id, routes)| {
                (
                    SourceId(id.to_owned()),
                    Slot::channel(id),
                    ChannelDefinition { routes },
                )
            })
            .collect();
        let refs: Vec<(SourceId, Slot, &ChannelDefinition)> = defs
            .iter()
            .map(|(s, slot, d)| (s.clone(), slot.clone(), d))
            .collect();
        let mut diags = Diagnostics::new();
        let plan = plan(&refs, &mut diags);
        (plan, diags)
    }

    fn origin(o: &str) -> Option<Cors> {
        Some(Cors {
            origin: Some(CorsList::List(vec![o.to_owned()])),
            ..Cors::default()
        })
    }

    #[test]
    fn shadowed_route_keeps_first_and_warns() {
        let (plan, diags) = run(vec![
            ("a", vec![route(Method::Get, "/users/:id", None)]),
            ("b", vec![route(Method::Get, "/users/:name", None)]),
        ]);
        assert_eq!(diags.codes(), ["compile/channel-route-shadowed"]);
        assert_eq!(plan.effective.len(), 1);
        assert_eq!(plan.effective[0].source_id.as_str(), "a");
        assert_eq!(plan.shadowed[0].winner_source_id.as_str(), "a");
        assert_eq!(plan.shadowed[0].path, "/users/:name");
    }

    #[test]
    fn duplicate_in_one_source_is_an_error_even_if_another_won() {
        let (_, diags) = run(vec![
            ("a", vec![route(Method::Get, "/users/:x", None)]),
            (
                "b",
                vec![
                    route(Method::Get, "/users/:id", None),
                    route(Method::Get, "/users/:name", None),
                ],
            ),
        ]);
        assert!(diags.has_code("compile/channel-route-duplicate"));
    }

    #[test]
    fn trailing_slash_is_the_same_identity() {
        let (plan, diags) = run(vec![
            ("a", vec![route(Method::Get, "/hooks/", None)]),
            ("b", vec![route(Method::Get, "/hooks", None)]),
        ]);
        assert_eq!(plan.effective[0].path, "/hooks");
        assert_eq!(diags.codes(), ["compile/channel-route-shadowed"]);
    }

    #[test]
    fn invalid_patterns() {
        for p in [
            "relative",
            "/a//b",
            "/a/:",
            "/a/:id?",
            "/a/:id+",
            "/a/:id*",
            "/a/:id(\\d+)",
            "/f/*",
            "/f/**",
            "/prefix:id",
            "/{optional}",
        ] {
            let (plan, diags) = run(vec![("a", vec![route(Method::Get, p, None)])]);
            assert!(plan.effective.is_empty(), "{p}");
            assert_eq!(
                diags.codes(),
                ["compile/channel-route-invalid-pattern"],
                "{p}"
            );
        }
    }

    #[test]
    fn reserved_collisions() {
        for (m, p) in [
            (Method::Get, "/.well-known/evoflux/ready"),
            (Method::Post, "/internal/schedules/nightly"),
            (Method::Delete, "/internal/fleets/:id/continue"),
            (Method::Get, "/api/viewer/document"),
            (Method::Get, "/api/viewer/:what"),
        ] {
            let (_, diags) = run(vec![("a", vec![route(m, p, None)])]);
            assert_eq!(diags.codes(), ["compile/reserved-route-collision"], "{p}");
        }
        // A different method on a method-specific reservation is fine.
        let (_, diags) = run(vec![(
            "a",
            vec![route(Method::Post, "/.well-known/evoflux/ready", None)],
        )]);
        assert!(diags.is_empty());
    }

    #[test]
    fn one_preflight_per_identity_with_ordered_causes() {
        let c = origin("https://a.example");
        let (plan, diags) = run(vec![
            ("get", vec![route(Method::Get, "/hooks/:id", c.clone())]),
            ("post", vec![route(Method::Post, "/hooks/:name", c.clone())]),
        ]);
        assert!(diags.is_empty(), "{}", diags.render_human());
        assert_eq!(plan.preflights.len(), 1);
        assert_eq!(plan.preflights[0].path, "/hooks/:id");
        let ids: Vec<_> = plan.preflights[0]
            .source_ids
            .iter()
            .map(SourceId::as_str)
            .collect();
        assert_eq!(ids, ["get", "post"]);
        // One source with two methods is one cause.
        let (plan, _) = run(vec![(
            "a",
            vec![
                route(Method::Get, "/x", c.clone()),
                route(Method::Post, "/x", c),
            ],
        )]);
        assert_eq!(plan.preflights[0].source_ids.len(), 1);
    }

    #[test]
    fn explicit_options_collides_with_preflight() {
        let c = origin("https://a.example");
        for p in ["/hooks/:id", "/hooks/current"] {
            let (_, diags) = run(vec![
                ("a", vec![route(Method::Get, "/hooks/:id", c.clone())]),
                ("b", vec![route(Method::Options, p, None)]),
            ]);
            assert!(diags.has_code("compile/channel-preflight-collision"), "{p}");
        }
    }

    #[test]
    fn cors_conflict_and_equal_options_on_overlapping_patterns() {
        let (_, diags) = run(vec![
            (
                "a",
                vec![route(Method::Get, "/hooks/:id", origin("https://a"))],
            ),
            (
                "b",
                vec![route(Method::Post, "/hooks/current", origin("https://b"))],
            ),
        ]);
        assert_eq!(diags.codes(), ["compile/channel-cors-conflict"]);
        let (plan, diags) = run(vec![
            (
                "a",
                vec![route(Method::Get, "/hooks/:id", origin("https://a"))],
            ),
            (
                "b",
                vec![route(Method::Post, "/hooks/current", origin("https://a"))],
            ),
        ]);
        assert!(diags.is_empty());
        assert_eq!(plan.preflights.len(), 2);
    }

    #[test]
    fn overlap_semantics() {
        let p = |s| RoutePattern::parse(s).unwrap();
        assert!(p("/hooks/:id").overlaps(&p("/hooks/current")));
        assert!(!p("/hooks/:id").overlaps(&p("/hooks/a/b")));
        assert!(!p("/a").overlaps(&p("/b")));
        assert!(p("/").overlaps(&p("/")));
    }
}
