//! The eight operations over the indexes of a session's repositories.
//!
//! Everything here is by exact name. A symbol resolves to the definitions
//! of that name (narrowed by its qualifier and the path hint); when several
//! remain they are all listed and the ambiguity is stated, never guessed.
//! Calls are matched by name and receiver: `Config::new()` and `cfg.new()`
//! are calls of a method `new`, and the first only of `Config`'s; a call
//! on a receiver whose declared type is another is no call of it; a call
//! on a receiver whose type is unknown is listed for every method of that
//! name as a guess. Each call says how certain it is ([`Certainty`]) and
//! why, and callers and callees are ranked by it.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use evoflux_core::code_operation::CodeOperation;

use crate::CodeError;
use crate::answer::{Answer, Entry, Related, Relation, RepoSummary, Source};
use crate::certainty::{Basis, Certainty};
use crate::facts::{DefKind, Definition, RefKind, Reference, TypeEvidence};
use crate::index::{IndexedFile, MAX_FILE_BYTES};
use crate::request::{Request, SymbolPath};
use crate::service::Repo;

/// Lines of a definition's source shown.
pub const MAX_SOURCE_LINES: u32 = 80;
/// Definitions whose source is shown.
pub const MAX_SOURCES: usize = 5;
/// Entries of an outline.
pub const MAX_OUTLINE: usize = 500;
/// Candidates offered for an unknown symbol.
pub const MAX_CANDIDATES: usize = 10;
/// How many levels of subtypes a method is looked for on.
const MAX_SUBTYPE_DEPTH: usize = 4;
/// Callers and callees shown by `neighborhood` (each).
const NEIGHBORS: usize = 8;

/// A definition of some repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct DefId {
    repo: usize,
    file: u32,
    def: u32,
}

/// One callee name as the source spells it: the lines it is called at,
/// and the definitions it may reach with why, most certain first.
type Callee = (String, Vec<u32>, Vec<(DefId, Basis)>);

/// A reference of some repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct RefId {
    repo: usize,
    file: u32,
    reference: u32,
}

pub(crate) struct Nav<'a> {
    all: &'a [Repo],
    /// The repositories the request looks in.
    selected: Vec<usize>,
    /// Whether the session has several roots (paths are then absolute).
    several: bool,
}

/// The module a file is: its stem, or its folder for the files that stand
/// for their folder in its language (Rust `mod.rs`/`lib.rs`/`main.rs`,
/// Python `__init__.py`, JavaScript and TypeScript `index.*`); a Go file's
/// package is its folder.
fn module_of(path: &str, language: crate::Language) -> &str {
    use crate::Language as L;
    let mut parts = path.rsplit('/');
    let file = parts.next().unwrap_or(path);
    let stem = file.split('.').next().unwrap_or(file);
    let folder = parts.next();
    let by_folder = match language {
        L::Rust => matches!(stem, "mod" | "lib" | "main"),
        L::Python => stem == "__init__",
        L::JavaScript | L::TypeScript | L::Tsx => stem == "index",
        L::Go => true,
        L::Java | L::C | L::Cpp => false,
    };
    match folder {
        Some(dir) if by_folder => dir,
        _ => stem,
    }
}

/// The Rust crate a file belongs to, as code names it: `evoflux_code` for
/// `crates/evoflux-code/src/lib.rs` (the folder that holds `src`).
fn crate_of(path: &str) -> Option<String> {
    let (before, _) = path.split_once("/src/")?;
    let name = before.rsplit('/').next()?;
    (!name.is_empty()).then(|| name.replace('-', "_"))
}

/// What a call must name to reach one definition, worked out once per
/// definition.
struct Target<'a> {
    id: DefId,
    def: &'a Definition,
    /// The types whose values have it: its container, the trait it
    /// implements, and for a trait's or interface's own method every type
    /// that implements that trait or interface.
    types: BTreeSet<String>,
    /// Reached only through a receiver or a path (a method of a type).
    member: bool,
}

/// The words of an identifier: `load_config` → load, config;
/// `loadConfig` → load, config.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if c == '_' || c == '$' || c == '#' {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

impl<'a> Nav<'a> {
    pub(crate) fn new(all: &'a [Repo], selected: Vec<usize>, several: bool) -> Nav<'a> {
        Nav {
            all,
            selected,
            several,
        }
    }

    fn file(&self, repo: usize, file: u32) -> &'a IndexedFile {
        &self.all[repo].index.files[file as usize]
    }

    fn def(&self, id: DefId) -> &'a Definition {
        &self.file(id.repo, id.file).facts.definitions[id.def as usize]
    }

    fn reference(&self, id: RefId) -> &'a Reference {
        &self.file(id.repo, id.file).facts.references[id.reference as usize]
    }

    fn qualified(&self, id: DefId) -> String {
        self.def(id)
            .qualified(self.file(id.repo, id.file).facts.language)
    }

    fn display_path(&self, repo: usize, rel: &str) -> String {
        if self.several {
            self.all[repo].root.join(rel).display().to_string()
        } else {
            rel.to_owned()
        }
    }

    fn entry(&self, id: DefId) -> Entry {
        let f = self.file(id.repo, id.file);
        let d = self.def(id);
        Entry {
            kind: d.kind.as_str().to_owned(),
            symbol: self.qualified(id),
            repository: self.all[id.repo].name.clone(),
            path: self.display_path(id.repo, &f.path),
            start_line: d.span.start_line,
            end_line: d.span.end_line,
            revision: f.revision.clone(),
        }
    }

    fn enclosing(&self, id: RefId) -> Option<DefId> {
        self.reference(id).enclosing.map(|def| DefId {
            repo: id.repo,
            file: id.file,
            def,
        })
    }

    fn ref_entry(&self, id: RefId) -> Entry {
        let f = self.file(id.repo, id.file);
        let r = self.reference(id);
        Entry {
            kind: r.kind.as_str().to_owned(),
            symbol: self
                .enclosing(id)
                .map(|d| self.qualified(d))
                .unwrap_or_default(),
            repository: self.all[id.repo].name.clone(),
            path: self.display_path(id.repo, &f.path),
            start_line: r.span.start_line,
            end_line: r.span.start_line,
            revision: f.revision.clone(),
        }
    }

    /// Every definition named `name` in the selected repositories.
    fn defs_named(&self, name: &str) -> Vec<DefId> {
        self.selected
            .iter()
            .flat_map(|&repo| {
                self.all[repo]
                    .lookup
                    .defs
                    .get(name)
                    .into_iter()
                    .flatten()
                    .map(move |&(file, def)| DefId { repo, file, def })
            })
            .collect()
    }

    /// Every reference named `name` in the selected repositories.
    fn refs_named(&self, name: &str) -> Vec<RefId> {
        self.selected
            .iter()
            .flat_map(|&repo| {
                self.all[repo]
                    .lookup
                    .refs
                    .get(name)
                    .into_iter()
                    .flatten()
                    .map(move |&(file, reference)| RefId {
                        repo,
                        file,
                        reference,
                    })
            })
            .collect()
    }

    /// Whether `name` is a type, trait, class or module somewhere.
    fn is_holder(&self, name: &str) -> bool {
        self.selected
            .iter()
            .any(|&r| self.all[r].lookup.holders.contains(name))
    }

    /// Whether the definition is known as `qualifier` (its container, the
    /// trait it implements, or its file's module).
    /// (For Rust, the crate's name is a module too: `evoflux_code::run`.)
    fn answers_to(&self, id: DefId, qualifier: &str) -> bool {
        let d = self.def(id);
        d.container.as_deref() == Some(qualifier) || d.implements.as_deref() == Some(qualifier) || {
            let f = self.file(id.repo, id.file);
            module_of(&f.path, f.facts.language) == qualifier
                || (f.facts.language == crate::Language::Rust
                    && crate_of(&f.path).as_deref() == Some(qualifier))
        }
    }

    /// Normalizes a path hint to repository-relative form for `repo`.
    fn relative(&self, repo: usize, path: &str) -> String {
        let p = std::path::Path::new(path);
        let rel = p
            .strip_prefix(&self.all[repo].root)
            .map_or_else(|_| path.to_owned(), |r| r.to_string_lossy().into_owned());
        rel.trim_start_matches("./")
            .trim_end_matches('/')
            .to_owned()
    }

    fn in_path(&self, repo: usize, file: &str, hint: &str) -> bool {
        let hint = self.relative(repo, hint);
        hint.is_empty() || hint == "." || file == hint || file.starts_with(&format!("{hint}/"))
    }

    /// The definitions a symbol names.
    fn resolve(&self, symbol: &SymbolPath, path: Option<&str>) -> Vec<DefId> {
        let mut ids: Vec<DefId> = self
            .defs_named(symbol.name())
            .into_iter()
            .filter(|&id| symbol.qualifier().is_none_or(|q| self.answers_to(id, q)))
            .filter(|&id| {
                path.is_none_or(|p| self.in_path(id.repo, &self.file(id.repo, id.file).path, p))
            })
            .collect();
        ids.sort();
        ids
    }

    fn scope(&self) -> String {
        let names: Vec<&str> = self
            .selected
            .iter()
            .map(|&r| self.all[r].name.as_str())
            .collect();
        match names.as_slice() {
            [one] => format!("repository `{one}`"),
            many => format!("repositories {}", many.join(", ")),
        }
    }

    /// Close names for a symbol that resolved to nothing: the qualified
    /// spellings of its name when only the qualifier was wrong, else names
    /// within a small edit distance.
    fn candidates(&self, symbol: &SymbolPath) -> Vec<String> {
        let named = self.defs_named(symbol.name());
        if !named.is_empty() {
            let set: BTreeSet<String> = named.iter().map(|&id| self.qualified(id)).collect();
            return set.into_iter().take(MAX_CANDIDATES).collect();
        }
        let want = symbol.name();
        let lower = want.to_lowercase();
        let max = if want.chars().count() >= 5 { 2 } else { 1 };
        let mut scored: BTreeSet<(usize, String)> = BTreeSet::new();
        for &r in &self.selected {
            for name in self.all[r].lookup.defs.keys() {
                let d = if name.to_lowercase() == lower {
                    0
                } else {
                    strsim::levenshtein(name, want)
                };
                if d <= max {
                    scored.insert((d, name.clone()));
                }
            }
        }
        scored
            .into_iter()
            .map(|(_, n)| n)
            .take(MAX_CANDIDATES)
            .collect()
    }

    /// Known names among the words of something that is not a symbol: a
    /// definition whose name is one of the words, or whose words all are.
    /// Names only; nothing is searched.
    pub(crate) fn prose_candidates(&self, prose: &str) -> Vec<String> {
        const COMMON: [&str; 24] = [
            "the", "and", "for", "with", "where", "what", "when", "how", "why", "which", "this",
            "that", "from", "into", "are", "was", "does", "did", "not", "all", "any", "who", "its",
            "can",
        ];
        let given: HashSet<String> = prose
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map(str::to_lowercase)
            .filter(|w| w.chars().count() >= 3 && !COMMON.contains(&w.as_str()))
            .collect();
        // (0 for a word, 1 for a joined name; length; name).
        let mut scored: BTreeSet<(usize, usize, String)> = BTreeSet::new();
        for &r in &self.selected {
            for name in self.all[r].lookup.defs.keys() {
                // The name is one of the words, or all of its words are
                // (`load config` → `load_config`): exact, never partial.
                let ws = words(name);
                if given.contains(&name.to_lowercase()) {
                    scored.insert((0, name.len(), name.clone()));
                } else if ws.len() > 1 && ws.iter().all(|w| given.contains(w)) {
                    scored.insert((1, name.len(), name.clone()));
                }
            }
        }
        let mut out: Vec<String> = Vec::new();
        for (_, _, name) in scored {
            if !out.contains(&name) {
                out.push(name);
            }
            if out.len() == MAX_CANDIDATES {
                break;
            }
        }
        out
    }

    fn target(&self, id: DefId) -> Target<'a> {
        let def = self.def(id);
        let mut types: BTreeSet<String> = def
            .container
            .iter()
            .chain(def.implements.iter())
            .cloned()
            .collect();
        // Subtypes have the method too: implementors of a trait or
        // interface, subclasses of a class (and theirs, a few levels down).
        let mut frontier: Vec<String> = def.container.iter().cloned().collect();
        for _ in 0..MAX_SUBTYPE_DEPTH {
            let mut next = Vec::new();
            for c in frontier {
                for h in self.type_defs(&c, id.repo) {
                    for (name, _, _) in self.implementors(h) {
                        if types.insert(name.clone()) {
                            next.push(name);
                        }
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        Target {
            id,
            def,
            types,
            member: def.kind == DefKind::Method && def.container.is_some(),
        }
    }

    /// The type a definition's code runs in: its container, or itself for
    /// a type.
    fn owner_of(&self, id: DefId) -> Option<&'a str> {
        let d = self.def(id);
        if d.kind.contains_members() && d.kind != DefKind::Module {
            return Some(&d.name);
        }
        d.container.as_deref()
    }

    /// Whether a file names a type anywhere (a use, an import, a call on
    /// its path).
    fn file_names(&self, repo: usize, file: u32, name: &str) -> bool {
        self.file(repo, file)
            .facts
            .references
            .iter()
            .any(|r| r.name == name || r.qualifier.as_deref() == Some(name))
    }

    /// Whether the call at `site` can reach `t`, and why: the one rule for
    /// callers, callees and references alike. `None`: it cannot.
    fn certainty(&self, t: &Target<'_>, site: RefId) -> Option<Basis> {
        let r = self.reference(site);
        let d = t.def;
        if r.kind != RefKind::Call || r.name != d.name {
            return None;
        }
        let language = self.file(site.repo, site.file).facts.language;
        if language.family() != self.file(t.id.repo, t.id.file).facts.language.family() {
            return None;
        }
        if let Some(p) = &d.params {
            // `x.f()` in Rust reaches only a function taking `self`.
            if r.on_value && language.dot_needs_receiver() && !p.receiver {
                return None;
            }
            // A call through the type may pass the receiver first
            // (`Type::m(&x, a)`, `Class.m(obj, a)`); Go's `f(g())` spreads
            // `g`'s results.
            let through_type = r.path_qualified || !language.dot_is_value();
            let fits = |n: u16| {
                p.accepts(n, 0)
                    || (p.receiver && through_type && p.accepts(n, 1))
                    || (language == crate::Language::Go && n == 1 && p.min > 1)
            };
            if r.args.is_some_and(|n| !fits(n)) {
                return None;
            }
        }
        // (A path without a named segment — `crate::f()`, `super::f()` —
        // is a bare call of a module's item.)
        if r.path_qualified
            && let Some(q) = r.qualifier.as_deref()
        {
            return self.answers_to(t.id, q).then_some(Basis::Path);
        }
        if !r.on_value {
            return self.bare_call(t, site, language);
        }
        // An empty type: a local variable whose type is not said.
        let typed = r.receiver.as_ref().filter(|rt| !rt.names.is_empty());
        if let Some(rt) = typed {
            let matches = rt.names.iter().any(|n| t.types.contains(n));
            match (matches, rt.evidence) {
                (true, TypeEvidence::Declared) => return Some(Basis::DeclaredType),
                (true, TypeEvidence::Constructed) => return Some(Basis::ConstructedType),
                (false, TypeEvidence::Declared) => return None,
                (false, TypeEvidence::Constructed) => {}
            }
        }
        let returned = r
            .receiver_from
            .as_deref()
            .and_then(|f| self.returns_of(f, t));
        if returned == Some(true) {
            return Some(Basis::ReturnType);
        }
        // In a language where `a.f()` may name a module or class
        // (`store.open()`, `Config.create()`), a qualifier that is no
        // local variable is a path.
        let value = r.receiver.is_some() || r.receiver_from.is_some();
        if let Some(q) = r
            .qualifier
            .as_deref()
            .filter(|_| !language.dot_is_value() && !value)
        {
            if self.answers_to(t.id, q) {
                return Some(Basis::Path);
            }
            if self.is_holder(q) {
                return None;
            }
        }
        if !t.member {
            return None;
        }
        if typed.is_some() || returned == Some(false) {
            return Some(Basis::OtherType);
        }
        let container = d.container.as_deref().unwrap_or_default();
        if let Some(q) = r.qualifier.as_deref() {
            let (qw, cw) = (words(q), words(container));
            if !cw.is_empty() && qw.len() >= cw.len() && qw[qw.len() - cw.len()..] == cw[..] {
                return Some(Basis::ReceiverName);
            }
        }
        let same_file = site.repo == t.id.repo && site.file == t.id.file;
        if same_file
            || t.types
                .iter()
                .any(|ty| self.file_names(site.repo, site.file, ty))
        {
            return Some(Basis::TypeInFile);
        }
        Some(Basis::NameOnly)
    }

    /// Whether what the functions named `f` are declared to return is one
    /// of `t`'s types: `None` when one of them declares nothing (or there
    /// is none in the index).
    fn returns_of(&self, f: &str, t: &Target<'_>) -> Option<bool> {
        let defs: Vec<&Definition> = self
            .defs_named(f)
            .into_iter()
            .map(|id| self.def(id))
            .filter(|d| d.kind.callable())
            .collect();
        if defs
            .iter()
            .any(|d| d.returns.iter().any(|n| t.types.contains(n)))
        {
            return Some(true);
        }
        (!defs.is_empty() && defs.iter().all(|d| !d.returns.is_empty())).then_some(false)
    }

    /// Whether a module named `module` of `t`'s repository imports `name`
    /// from `t`'s module, so that importing it from `module` imports `t`.
    fn reexports(&self, module: &str, name: &str, t: &Target<'_>) -> bool {
        let family = self.file(t.id.repo, t.id.file).facts.language.family();
        self.all[t.id.repo].index.files.iter().any(|f| {
            f.facts.language.family() == family
                && module_of(&f.path, f.facts.language) == module
                && f.facts.references.iter().any(|r| {
                    r.kind == RefKind::Import
                        && r.name == name
                        && r.qualifier
                            .as_deref()
                            .is_some_and(|q| self.answers_to(t.id, q))
                })
        })
    }

    /// A call by name alone (`f()`, `crate::f()`).
    fn bare_call(&self, t: &Target<'_>, site: RefId, language: crate::Language) -> Option<Basis> {
        let d = t.def;
        if t.member {
            // Java and C++ call their own methods without `this.`.
            let implicit_this = matches!(language, crate::Language::Java | crate::Language::Cpp);
            let own = self
                .enclosing(site)
                .and_then(|e| self.owner_of(e))
                .is_some_and(|o| t.types.contains(o));
            return (implicit_this && own).then_some(Basis::DeclaredType);
        }
        let here = self.file(site.repo, site.file);
        let there = self.file(t.id.repo, t.id.file);
        // A Go package is its folder: its files call each other by name.
        let folder = |path: &'a str| path.rsplit_once('/').map_or("", |p| p.0);
        let same_module = site.repo == t.id.repo
            && (site.file == t.id.file
                || (language == crate::Language::Go && folder(&here.path) == folder(&there.path)));
        if same_module {
            return Some(Basis::SameModule);
        }
        let imports: Vec<&Reference> = here
            .facts
            .references
            .iter()
            .filter(|r| r.kind == RefKind::Import && r.name == d.name)
            .collect();
        // Imported from its module, or from one that imports it from
        // there (a re-export: Python's `utils` importing `_internal_utils`'s
        // function, a TypeScript `index.ts`).
        let from_module = |q: &str| self.answers_to(t.id, q);
        if imports.iter().any(|i| {
            i.qualifier
                .as_deref()
                .is_some_and(|q| from_module(q) || self.reexports(q, &d.name, t))
        }) {
            return Some(Basis::Imported);
        }
        // C and C++: the file includes the header of the definition's
        // file (`disk.h` for `disk.c`), or the header itself.
        let includes = language.family() == crate::Language::C
            && here.facts.references.iter().any(|r| {
                r.kind == RefKind::Import && r.name == module_of(&there.path, there.facts.language)
            });
        if includes {
            return Some(Basis::Imported);
        }
        if !imports.is_empty() {
            return Some(Basis::ImportedElsewhere);
        }
        let free = self
            .defs_named(&d.name)
            .into_iter()
            .filter(|&id| {
                let o = self.def(id);
                o.kind.callable() && !(o.kind == DefKind::Method && o.container.is_some())
            })
            .count();
        Some(if free <= 1 {
            Basis::OnlyDefinition
        } else {
            Basis::NameOnly
        })
    }

    /// The calls of `target`, grouped by the definition they are in
    /// (`None`: at the top level of a file), most certain first.
    fn callers(&self, target: DefId) -> Vec<(Option<DefId>, RefId, Vec<u32>, Basis)> {
        /// Calls grouped by certainty, then (repository, file, enclosing
        /// definition).
        type Site = (Certainty, usize, u32, Option<u32>);
        let t = self.target(target);
        let mut groups: BTreeMap<Site, (RefId, Vec<u32>, Basis)> = BTreeMap::new();
        for id in self.refs_named(&t.def.name) {
            let Some(basis) = self.certainty(&t, id) else {
                continue;
            };
            let r = self.reference(id);
            let g = groups
                .entry((basis.certainty(), id.repo, id.file, r.enclosing))
                .or_insert_with(|| (id, Vec::new(), basis));
            // Two calls on one line are one place to read.
            if g.1.last() != Some(&r.span.start_line) {
                g.1.push(r.span.start_line);
            }
            g.2 = g.2.min(basis);
        }
        let mut out: Vec<(Option<DefId>, RefId, Vec<u32>, Basis)> = groups
            .into_iter()
            .map(|((_, repo, file, enc), (first, lines, basis))| {
                (
                    enc.map(|def| DefId { repo, file, def }),
                    first,
                    lines,
                    basis,
                )
            })
            .collect();
        // Stable: within one basis, in repository and path order.
        out.sort_by_key(|c| c.3);
        out
    }

    /// What `target` calls: each callee name (with its receiver), the
    /// lines, and the definitions it may reach with how certainly — most
    /// certain first, then in the order of the calls.
    fn callees(&self, target: DefId) -> Vec<Callee> {
        let d = self.def(target);
        let f = self.file(target.repo, target.file);
        let mut targets: BTreeMap<DefId, Target<'a>> = BTreeMap::new();
        // By shown name: the lines, and each reachable definition's best basis.
        let mut order: Vec<String> = Vec::new();
        let mut found: BTreeMap<String, (Vec<u32>, BTreeMap<DefId, Basis>)> = BTreeMap::new();
        for (i, r) in f.facts.references.iter().enumerate() {
            if r.kind != RefKind::Call || !d.span.contains(&r.span) {
                continue;
            }
            let site = RefId {
                repo: target.repo,
                file: target.file,
                reference: u32::try_from(i).unwrap_or(u32::MAX),
            };
            let shown = match (&r.qualifier, r.path_qualified) {
                (Some(q), true) => format!("{q}::{}", r.name),
                (Some(q), false) => format!("{q}.{}", r.name),
                (None, _) => r.name.clone(),
            };
            let entry = found.entry(shown.clone()).or_default();
            if entry.0.is_empty() {
                order.push(shown);
            }
            entry.0.push(r.span.start_line);
            for id in self.defs_named(&r.name) {
                if !self.def(id).kind.callable() {
                    continue;
                }
                let t = targets.entry(id).or_insert_with(|| self.target(id));
                if let Some(b) = self.certainty(t, site) {
                    let best = entry.1.entry(id).or_insert(b);
                    *best = (*best).min(b);
                }
            }
        }
        let mut out: Vec<Callee> = order
            .into_iter()
            .map(|shown| {
                let (lines, defs) = found.remove(&shown).unwrap_or_default();
                let mut defs: Vec<(DefId, Basis)> = defs.into_iter().collect();
                defs.sort_by_key(|&(id, b)| (b, id));
                (shown, lines, defs)
            })
            .collect();
        // Stable: calls in source order within one certainty; calls that
        // reach nothing in the index last.
        out.sort_by_key(|(_, _, defs)| {
            defs.first()
                .map_or((1, Certainty::Guess), |&(_, b)| (0, b.certainty()))
        });
        out
    }

    /// The types that implement a trait, interface or base class `name`,
    /// with where: explicit implementations, and for Go interfaces every
    /// type whose methods include all of the interface's.
    fn implementors(&self, target: DefId) -> Vec<(String, Option<RefId>, Vec<DefId>)> {
        let d = self.def(target);
        let mut out: Vec<(String, Option<RefId>, Vec<DefId>)> = Vec::new();
        for id in self.refs_named(&d.name) {
            let r = self.reference(id);
            if r.kind != RefKind::Implementation {
                continue;
            }
            match r.qualifier.clone() {
                Some(implementor) => {
                    let defs = self.type_defs(&implementor, id.repo);
                    out.push((implementor, Some(id), defs));
                }
                None => out.push(("(blanket implementation)".to_owned(), Some(id), Vec::new())),
            }
        }
        let go = self.file(target.repo, target.file).facts.language == crate::Language::Go;
        if go && d.kind == DefKind::Interface {
            let f = self.file(target.repo, target.file);
            let wanted: BTreeSet<&str> = f
                .facts
                .definitions
                .iter()
                .filter(|m| m.kind == DefKind::Method && m.container.as_deref() == Some(&d.name))
                .map(|m| m.name.as_str())
                .collect();
            if !wanted.is_empty() {
                // Method sets by (repository, package folder, type); an
                // interface's own method list is not a method set.
                type Key<'k> = (usize, &'k str, &'k str);
                let mut have: BTreeMap<Key<'_>, BTreeSet<&str>> = BTreeMap::new();
                let mut interfaces: HashSet<Key<'_>> = HashSet::new();
                for &repo in &self.selected {
                    for g in &self.all[repo].index.files {
                        if g.facts.language != crate::Language::Go {
                            continue;
                        }
                        let folder = g.path.rsplit_once('/').map_or("", |(dir, _)| dir);
                        for m in &g.facts.definitions {
                            if m.kind == DefKind::Interface {
                                interfaces.insert((repo, folder, m.name.as_str()));
                            }
                            if let (DefKind::Method, Some(c)) = (m.kind, m.container.as_deref()) {
                                have.entry((repo, folder, c))
                                    .or_default()
                                    .insert(m.name.as_str());
                            }
                        }
                    }
                }
                for (key @ (repo, folder, ty), methods) in have {
                    if interfaces.contains(&key) || !wanted.is_subset(&methods) {
                        continue;
                    }
                    let defs: Vec<DefId> = self
                        .type_defs(ty, repo)
                        .into_iter()
                        .filter(|t| {
                            t.repo == repo
                                && self
                                    .file(t.repo, t.file)
                                    .path
                                    .rsplit_once('/')
                                    .map_or("", |(d, _)| d)
                                    == folder
                        })
                        .collect();
                    out.push((ty.to_owned(), None, defs));
                }
            }
        }
        out
    }

    /// The type definitions named `name`, those of `repo` first.
    fn type_defs(&self, name: &str, repo: usize) -> Vec<DefId> {
        let mut ids: Vec<DefId> = self
            .defs_named(name)
            .into_iter()
            .filter(|&id| {
                self.def(id).kind.contains_members() && self.def(id).kind != DefKind::Module
            })
            .collect();
        ids.sort_by_key(|id| (id.repo != repo, *id));
        ids
    }

    fn source(&self, id: DefId) -> Option<Source> {
        let f = self.file(id.repo, id.file);
        let d = self.def(id);
        // Read only a regular file: one replaced by a link since the
        // refresh is not followed out of the root.
        let path = self.all[id.repo].root.join(&f.path);
        if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            return None;
        }
        let text = std::fs::read(&path).ok()?;
        let text = String::from_utf8_lossy(&text);
        let shown = d.span.lines().min(MAX_SOURCE_LINES);
        let body: String = text
            .lines()
            .skip(d.span.start_line.saturating_sub(1) as usize)
            .take(shown as usize)
            .map(|l| format!("{l}\n"))
            .collect();
        Some(Source {
            entry: self.entry(id),
            language: f.facts.language.fence().to_owned(),
            text: body,
            omitted_lines: d.span.lines() - shown,
        })
    }

    fn summaries(&self) -> Vec<RepoSummary> {
        self.selected
            .iter()
            .map(|&r| self.all[r].summary())
            .collect()
    }

    /// What every answer states about what the index did not see.
    fn index_limitations(&self, touched: &BTreeSet<(usize, u32)>) -> Vec<String> {
        let mut out = Vec::new();
        for &r in &self.selected {
            let repo = &self.all[r];
            let s = &repo.index.skipped;
            if !s.too_large.is_empty() {
                out.push(format!(
                    "{}: {} source file(s) over {} KiB were not indexed: {}",
                    repo.name,
                    s.too_large.len(),
                    MAX_FILE_BYTES / 1024,
                    s.too_large
                        .iter()
                        .take(5)
                        .map(|p| self.display_path(r, p))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            if s.over_count > 0 {
                out.push(format!(
                    "{}: {} source file(s) beyond the file limit were not indexed",
                    repo.name, s.over_count
                ));
            }
            for (path, why) in s.failed.iter().take(5) {
                out.push(format!(
                    "{}: {} could not be indexed: {why}",
                    repo.name,
                    self.display_path(r, path)
                ));
            }
            if let Some(e) = &repo.persist_error {
                out.push(format!(
                    "{}: {e}; the index is rebuilt next session",
                    repo.name
                ));
            }
        }
        for &(repo, file) in touched {
            let f = self.file(repo, file);
            if f.facts.has_errors {
                out.push(format!(
                    "{} has syntax errors: its facts are what the parser recovered",
                    self.display_path(repo, &f.path)
                ));
            }
        }
        out
    }

    /// Runs the request's operation.
    pub(crate) fn run(&self, request: &Request) -> Result<Answer, CodeError> {
        if request.operation == CodeOperation::Outline {
            return self.outline(request);
        }
        let Some(symbol) = &request.symbol else {
            return Err(CodeError::MissingSymbol {
                operation: request.operation,
            });
        };
        let matches = self.resolve(symbol, request.path.as_deref());
        if matches.is_empty() {
            return Err(CodeError::UnknownSymbol {
                symbol: match &request.path {
                    Some(p) => format!("{} (in {p})", symbol.text),
                    None => symbol.text.clone(),
                },
                scope: self.scope(),
                candidates: self.candidates(symbol),
            });
        }
        let mut answer = Answer {
            operation: request.operation,
            subject: symbol.text.clone(),
            repositories: self.summaries(),
            matches: Vec::new(),
            definitions: Vec::new(),
            relationships: Vec::new(),
            limitations: Vec::new(),
        };
        let mut touched: BTreeSet<(usize, u32)> = BTreeSet::new();
        if matches.len() > request.limit {
            answer.limitations.push(format!(
                "showing {} of {} definitions of `{}`; narrow with `path` or `repository`",
                request.limit,
                matches.len(),
                symbol.text
            ));
        }
        let matches: Vec<DefId> = matches.into_iter().take(request.limit).collect();
        if matches.len() > 1 {
            let qualified: BTreeSet<String> = matches.iter().map(|&m| self.qualified(m)).collect();
            answer.limitations.push(format!(
                "`{}` is ambiguous: {} definitions match ({}); each is answered — qualify the symbol or give `path` to pick one",
                symbol.text,
                matches.len(),
                qualified.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
        for &m in &matches {
            answer.matches.push(self.entry(m));
            touched.insert((m.repo, m.file));
        }
        let mut related: Vec<Related> = Vec::new();
        let by_name = matches!(
            request.operation,
            CodeOperation::Callers
                | CodeOperation::References
                | CodeOperation::Impact
                | CodeOperation::Neighborhood
                | CodeOperation::Callees
        );
        match request.operation {
            CodeOperation::Definition => {
                for &m in matches.iter().take(MAX_SOURCES) {
                    answer.definitions.extend(self.source(m));
                    self.container_of(m, &mut related);
                }
                if matches.len() > MAX_SOURCES {
                    answer.limitations.push(format!(
                        "the source of the first {MAX_SOURCES} definitions is shown; read the others at the lines listed"
                    ));
                }
            }
            CodeOperation::Callers => {
                for &m in &matches {
                    self.push_callers(m, None, &mut related, &mut touched);
                }
            }
            CodeOperation::Callees => {
                for &m in &matches {
                    self.push_callees(m, usize::MAX, &mut related);
                }
            }
            CodeOperation::References => {
                for &m in &matches {
                    self.push_references(m, &mut related, &mut touched);
                }
            }
            CodeOperation::Implementations => {
                for &m in &matches {
                    self.push_implementations(m, &mut related, &mut answer.limitations);
                }
            }
            CodeOperation::Impact => {
                for &m in &matches {
                    self.push_impact(m, request.depth, &mut related, &mut touched);
                }
            }
            CodeOperation::Neighborhood => {
                for &m in &matches {
                    self.container_of(m, &mut related);
                    let before = related.len();
                    self.push_callers(m, None, &mut related, &mut touched);
                    let callers = related.len() - before;
                    if callers > NEIGHBORS {
                        related.truncate(before + NEIGHBORS);
                        answer.limitations.push(format!(
                            "{} has {callers} callers; {NEIGHBORS} are shown (ask `callers` for all)",
                            self.qualified(m)
                        ));
                    }
                    self.push_callees(m, NEIGHBORS, &mut related);
                    let before = related.len();
                    self.push_siblings(m, &mut related);
                    let siblings = related.len() - before;
                    if siblings > NEIGHBORS {
                        related.truncate(before + NEIGHBORS);
                        answer.limitations.push(format!(
                            "{} has {siblings} siblings; {NEIGHBORS} are shown (ask `outline` of its file for all)",
                            self.qualified(m)
                        ));
                    }
                }
            }
            CodeOperation::Outline => {}
        }
        let found = related.len();
        let guesses = related
            .iter()
            .filter(|r| r.certainty == Some(Certainty::Guess))
            .count();
        if related.len() > request.limit {
            answer.limitations.push(format!(
                "showing {} of {} relationships; raise `limit` (up to {}) or narrow with `path`",
                request.limit,
                related.len(),
                crate::request::MAX_LIMIT
            ));
            related.truncate(request.limit);
        }
        if related.is_empty() && request.operation != CodeOperation::Definition {
            answer.limitations.push(format!(
                "no {} of `{}` found in the index",
                match request.operation {
                    CodeOperation::Callers | CodeOperation::Impact => "callers",
                    CodeOperation::Callees => "calls",
                    CodeOperation::References => "references",
                    CodeOperation::Implementations => "implementations",
                    CodeOperation::Neighborhood => "neighbors",
                    CodeOperation::Definition | CodeOperation::Outline => "results",
                },
                symbol.text
            ));
        }
        answer.relationships = related;
        if request.operation == CodeOperation::Implementations {
            answer.limitations.push(
                "implementations are matched by the trait, interface or base class's name: a type implementing another item of the same name (from a dependency) is listed too".to_owned(),
            );
        }
        if by_name {
            answer.limitations.push(
                "calls are matched by name and by the receiver's type where the file declares it (a typed parameter, variable or field, `self`, a path), not by a compiler: each call says how certain it is (exact, likely, guess) and why, the most certain first; calls through aliases or function values are not seen".to_owned(),
            );
            if guesses > 0 {
                answer.limitations.push(format!(
                    "{guesses} of the {found} relationships found are guesses (a call on a receiver of unknown type, or a name defined in several places), listed after the exact and likely ones: check them before relying on them"
                ));
            }
        }
        answer.limitations.extend(self.index_limitations(&touched));
        Ok(answer)
    }

    fn container_of(&self, m: DefId, related: &mut Vec<Related>) {
        let d = self.def(m);
        let Some(c) = d.container.as_deref() else {
            return;
        };
        let mut holders = self.type_defs(c, m.repo);
        holders.sort_by_key(|h| (h.repo != m.repo || h.file != m.file, *h));
        for h in holders.into_iter().take(3) {
            related.push(Related {
                relation: Relation::Container,
                of: self.qualified(m),
                name: c.to_owned(),
                entry: Some(self.entry(h)),
                lines: Vec::new(),
                depth: None,
                certainty: None,
                basis: None,
            });
        }
    }

    fn push_siblings(&self, m: DefId, related: &mut Vec<Related>) {
        let d = self.def(m);
        let f = self.file(m.repo, m.file);
        // A function's local definitions are nobody's siblings.
        let local = |s: &Definition| {
            f.facts.definitions.iter().any(|o| {
                o.kind.callable()
                    && !o.kind.contains_members()
                    && o.span != s.span
                    && o.span.contains(&s.span)
            })
        };
        for (i, s) in f.facts.definitions.iter().enumerate() {
            let id = DefId {
                repo: m.repo,
                file: m.file,
                def: u32::try_from(i).unwrap_or(u32::MAX),
            };
            if id != m
                && s.container == d.container
                && !d.span.contains(&s.span)
                && !s.span.contains(&d.span)
                && !local(s)
            {
                related.push(Related {
                    relation: Relation::Sibling,
                    of: self.qualified(m),
                    name: s.name.clone(),
                    entry: Some(self.entry(id)),
                    lines: Vec::new(),
                    depth: None,
                    certainty: None,
                    basis: None,
                });
            }
        }
    }

    fn push_callers(
        &self,
        m: DefId,
        depth: Option<u8>,
        related: &mut Vec<Related>,
        touched: &mut BTreeSet<(usize, u32)>,
    ) -> Vec<DefId> {
        let mut next = Vec::new();
        for (caller, first, lines, basis) in self.callers(m) {
            touched.insert((first.repo, first.file));
            let entry = match caller {
                Some(c) => {
                    next.push(c);
                    self.entry(c)
                }
                None => Entry {
                    kind: "top level".to_owned(),
                    symbol: String::new(),
                    ..self.ref_entry(first)
                },
            };
            related.push(Related {
                relation: Relation::Caller,
                of: self.qualified(m),
                name: entry.symbol.clone(),
                entry: Some(entry),
                lines,
                depth,
                certainty: Some(basis.certainty()),
                basis: Some(basis),
            });
        }
        next
    }

    fn push_impact(
        &self,
        m: DefId,
        max_depth: u8,
        related: &mut Vec<Related>,
        touched: &mut BTreeSet<(usize, u32)>,
    ) {
        let mut seen: HashSet<DefId> = HashSet::from([m]);
        // A caller reached twice (two paths, or from an earlier match) is
        // listed once, at the depth it was first reached (the search goes
        // depth by depth).
        let mut listed: HashSet<Entry> = related.iter().filter_map(|r| r.entry.clone()).collect();
        let mut frontier = vec![m];
        for depth in 1..=max_depth {
            let mut next = Vec::new();
            for f in frontier {
                let mut found = Vec::new();
                for c in self.push_callers(f, Some(depth), &mut found, touched) {
                    if seen.insert(c) {
                        next.push(c);
                    }
                }
                related.extend(
                    found
                        .into_iter()
                        .filter(|r| r.entry.clone().is_none_or(|e| listed.insert(e))),
                );
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
    }

    fn push_callees(&self, m: DefId, max: usize, related: &mut Vec<Related>) {
        for (name, lines, defs) in self.callees(m).into_iter().take(max) {
            if defs.is_empty() {
                related.push(Related {
                    relation: Relation::ExternalCallee,
                    of: self.qualified(m),
                    name,
                    entry: None,
                    lines,
                    depth: None,
                    certainty: None,
                    basis: None,
                });
                continue;
            }
            for (d, basis) in defs {
                related.push(Related {
                    relation: Relation::Callee,
                    of: self.qualified(m),
                    name: name.clone(),
                    entry: Some(self.entry(d)),
                    lines: lines.clone(),
                    depth: None,
                    certainty: Some(basis.certainty()),
                    basis: Some(basis),
                });
            }
        }
    }

    fn push_references(
        &self,
        m: DefId,
        related: &mut Vec<Related>,
        touched: &mut BTreeSet<(usize, u32)>,
    ) {
        let t = self.target(m);
        let d = t.def;
        let mut found: Vec<Related> = Vec::new();
        for id in self.refs_named(&d.name) {
            let r = self.reference(id);
            let (counts, basis) = match r.kind {
                RefKind::Call => {
                    let b = self.certainty(&t, id);
                    (b.is_some(), b)
                }
                RefKind::Type | RefKind::Implementation => (d.kind.contains_members(), None),
                RefKind::Import => (true, None),
            };
            if !counts {
                continue;
            }
            touched.insert((id.repo, id.file));
            found.push(Related {
                relation: Relation::Reference,
                of: self.qualified(m),
                name: r.name.clone(),
                entry: Some(self.ref_entry(id)),
                lines: Vec::new(),
                depth: None,
                certainty: basis.map(Basis::certainty),
                basis,
            });
        }
        // Stable: what is certain (a type use, an import, an exact call)
        // first, in source order.
        found.sort_by_key(|r| r.certainty.unwrap_or(Certainty::Exact));
        related.extend(found);
    }

    fn push_implementations(
        &self,
        m: DefId,
        related: &mut Vec<Related>,
        limitations: &mut Vec<String>,
    ) {
        let d = self.def(m);
        match d.kind {
            DefKind::Interface | DefKind::Class | DefKind::Type => {
                for (implementor, site, defs) in self.implementors(m) {
                    let entry = match (defs.first(), site) {
                        (Some(&t), _) => Some(self.entry(t)),
                        // A type the index does not define (`Box<T>`, a
                        // blanket impl): the `impl` itself is the place.
                        (None, Some(s)) => Some(Entry {
                            symbol: implementor.clone(),
                            ..self.ref_entry(s)
                        }),
                        (None, None) => None,
                    };
                    related.push(Related {
                        relation: Relation::Implementation,
                        of: self.qualified(m),
                        name: implementor,
                        entry,
                        lines: site
                            .map(|s| vec![self.reference(s).span.start_line])
                            .unwrap_or_default(),
                        depth: None,
                        certainty: None,
                        basis: None,
                    });
                }
            }
            DefKind::Method => {
                let Some(owner) = d.container.as_deref() else {
                    return;
                };
                let owners: Vec<DefId> = self
                    .type_defs(owner, m.repo)
                    .into_iter()
                    .filter(|&o| {
                        matches!(
                            self.def(o).kind,
                            DefKind::Interface | DefKind::Class | DefKind::Type
                        )
                    })
                    .collect();
                let mut implementors: BTreeSet<String> = BTreeSet::new();
                for o in owners {
                    for (name, _, _) in self.implementors(o) {
                        implementors.insert(name);
                    }
                }
                for id in self.defs_named(&d.name) {
                    if id == m {
                        continue;
                    }
                    let other = self.def(id);
                    let implements = other.implements.as_deref() == Some(owner)
                        || other
                            .container
                            .as_deref()
                            .is_some_and(|c| implementors.contains(c));
                    if other.kind == DefKind::Method && implements {
                        related.push(Related {
                            relation: Relation::Implementation,
                            of: self.qualified(m),
                            name: self.qualified(id),
                            entry: Some(self.entry(id)),
                            lines: Vec::new(),
                            depth: None,
                            certainty: None,
                            basis: None,
                        });
                    }
                }
            }
            DefKind::Function | DefKind::Constant | DefKind::Module | DefKind::Macro => {
                limitations.push(format!(
                    "`{}` is a {}: only traits, interfaces, classes, types and their methods have implementations",
                    self.qualified(m),
                    d.kind.as_str()
                ));
            }
        }
    }

    fn outline(&self, request: &Request) -> Result<Answer, CodeError> {
        let path = request.path.as_deref().unwrap_or_default();
        let found: Vec<(usize, u32)> = self
            .selected
            .iter()
            .filter_map(|&r| {
                let rel = self.relative(r, path);
                self.all[r]
                    .index
                    .files
                    .binary_search_by(|f| f.path.as_str().cmp(&rel))
                    .ok()
                    .map(|i| (r, u32::try_from(i).unwrap_or(u32::MAX)))
            })
            .collect();
        if found.len() > 1 {
            return Err(CodeError::AmbiguousFile {
                path: path.to_owned(),
                candidates: found
                    .iter()
                    .map(|&(r, f)| self.display_path(r, &self.file(r, f).path))
                    .collect(),
            });
        }
        let Some(&(repo, file)) = found.first() else {
            let base = path.rsplit('/').next().unwrap_or(path);
            let candidates: Vec<String> = self
                .selected
                .iter()
                .flat_map(|&r| {
                    self.all[r]
                        .index
                        .files
                        .iter()
                        .filter(|f| f.path.rsplit('/').next() == Some(base))
                        .map(move |f| self.display_path(r, &f.path))
                })
                .take(MAX_CANDIDATES)
                .collect();
            return Err(CodeError::UnknownFile {
                path: path.to_owned(),
                candidates,
            });
        };
        let f = self.file(repo, file);
        let mut matches: Vec<Entry> = (0..f.facts.definitions.len())
            .map(|i| {
                self.entry(DefId {
                    repo,
                    file,
                    def: u32::try_from(i).unwrap_or(u32::MAX),
                })
            })
            .collect();
        let mut limitations = Vec::new();
        if matches.len() > MAX_OUTLINE {
            limitations.push(format!(
                "showing the first {MAX_OUTLINE} of {} definitions",
                matches.len()
            ));
            matches.truncate(MAX_OUTLINE);
        }
        limitations.extend(self.index_limitations(&BTreeSet::from([(repo, file)])));
        Ok(Answer {
            operation: CodeOperation::Outline,
            subject: self.display_path(repo, &f.path),
            repositories: self.summaries(),
            matches,
            definitions: Vec::new(),
            relationships: Vec::new(),
            limitations,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_are_file_stems_or_folders() {
        use crate::Language as L;
        assert_eq!(module_of("src/config.rs", L::Rust), "config");
        assert_eq!(module_of("src/net/mod.rs", L::Rust), "net");
        assert_eq!(module_of("app/store/__init__.py", L::Python), "store");
        assert_eq!(module_of("app/main.py", L::Python), "main");
        assert_eq!(module_of("pkg/store/disk.go", L::Go), "store");
        assert_eq!(module_of("web/index.ts", L::TypeScript), "web");
        assert_eq!(module_of("web/main.ts", L::TypeScript), "main");
    }

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(words("load_config"), ["load", "config"]);
        assert_eq!(words("loadConfig"), ["load", "config"]);
        assert_eq!(words("HTTPServer"), ["httpserver"]);
        assert_eq!(words("Config"), ["config"]);
    }
}
