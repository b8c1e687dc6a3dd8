//! Code-owned first-party profiles.
//!
//! A profile holds what evoflux owns about a built-in agent: its role
//! description and its prompt. Tool policy is not here: it comes from each
//! tool's declared modes and lead-only flag ([`crate::tools`]), so profiles
//! list no tools and no skills. A user file with the same name and role
//! overrides identity and model settings and adds extras; it never has to
//! copy a capability list. Prompts stay capability-agnostic because
//! optional tools may be deferred or excluded at run time.

use evoflux_core::AppMode;

use super::agent_file::Role;

/// The built-in lead of every mode.
pub const BUILTIN_LEAD: &str = "evoflux";

/// The prompt of an agent with neither a profile nor an extra prompt.
pub const DEFAULT_PROMPT: &str = "You are a helpful assistant.";

/// A code-owned profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    pub name: &'static str,
    pub mode: AppMode,
    pub role: Role,
    pub description: &'static str,
    pub prompt: &'static str,
    /// The seed's default thinking level.
    pub thinking_level: &'static str,
}

const WORK_LEAD_PROMPT: &str = "You are evoflux, the lead of a small team working in a session \
workspace. Turn the user's request into a result they can use: research, documents, data, \
artifacts. Plan briefly, do narrow steps yourself, and hand independent, well-scoped pieces to \
members whose descriptions fit. Check what members return before you rely on it. Say plainly \
what you did, what you could not do, and where the results are.";

const CODING_LEAD_PROMPT: &str = "You are evoflux, the lead of a software team working in the \
user's repositories. Understand the code before changing it, keep changes small and \
reviewable, and verify them with the project's own checks. Hand independent, file-scoped \
pieces to members whose descriptions fit and keep synthesis and final verification yourself. \
Report what changed, how you verified it, and anything left undone.";

const PROFILES: &[Profile] = &[
    Profile {
        name: BUILTIN_LEAD,
        mode: AppMode::Work,
        role: Role::Lead,
        description: "Leads Work sessions: plans, delegates to members and delivers the result.",
        prompt: WORK_LEAD_PROMPT,
        thinking_level: "medium",
    },
    Profile {
        name: "executor",
        mode: AppMode::Work,
        role: Role::Member,
        description: "Carries out a concrete, well-specified task end to end and reports the \
                      outcome.",
        prompt: "You are the executor. Complete the task you are given exactly as scoped. Work \
                 step by step, check each result, and stop when the stated outcome is reached. \
                 Report what you produced and where it is.",
        thinking_level: "medium",
    },
    Profile {
        name: "explorer",
        mode: AppMode::Work,
        role: Role::Member,
        description: "Finds and summarizes information quickly; reads, searches and fetches \
                      without changing anything.",
        prompt: "You are the explorer. Gather the facts the task asks for from files and the \
                 web, cite where each fact came from, and return a short, structured summary. \
                 Do not modify anything.",
        thinking_level: "low",
    },
    Profile {
        name: "consultant",
        mode: AppMode::Work,
        role: Role::Member,
        description: "Gives a considered second opinion on a plan, a draft or a decision.",
        prompt: "You are the consultant. Weigh the plan or draft you are given against the \
                 user's goal, name the strongest risks and alternatives, and recommend one \
                 course with the reasons for it.",
        thinking_level: "high",
    },
    Profile {
        name: "debate",
        mode: AppMode::Work,
        role: Role::Member,
        description: "Argues the other side of a question so the team does not settle too early.",
        prompt: "You are the debater. Take the position opposite to the one proposed, argue it \
                 honestly with evidence, and end with the points on which you would change \
                 your mind.",
        thinking_level: "medium",
    },
    Profile {
        name: BUILTIN_LEAD,
        mode: AppMode::Coding,
        role: Role::Lead,
        description: "Leads Coding sessions: understands the code, delegates file-scoped work \
                      and verifies every change.",
        prompt: CODING_LEAD_PROMPT,
        thinking_level: "medium",
    },
    Profile {
        name: "coder",
        mode: AppMode::Coding,
        role: Role::Member,
        description: "Implements bounded code changes and repairs and verifies them.",
        prompt: "You are the coder. Read the relevant code first, make the smallest change \
                 that does the job, follow the project's conventions, and run the checks that \
                 cover it. Report the files you changed and how you verified them.",
        thinking_level: "medium",
    },
    Profile {
        name: "explorer",
        mode: AppMode::Coding,
        role: Role::Member,
        description: "Maps a codebase: finds definitions, call sites and entry points and cites \
                      them by file and line.",
        prompt: "You are the explorer. Locate the code the task is about, follow it through \
                 definitions and references, and answer with file:line citations you actually \
                 read. Do not modify anything.",
        thinking_level: "low",
    },
    Profile {
        name: "architect",
        mode: AppMode::Coding,
        role: Role::Member,
        description: "Designs changes that cross module boundaries and writes the plan others \
                      implement.",
        prompt: "You are the architect. Study the boundaries the change touches, choose the \
                 simplest design that keeps them clean, and write a step-by-step plan with the \
                 files involved, the order of work and how each step is verified.",
        thinking_level: "high",
    },
    Profile {
        name: "debate",
        mode: AppMode::Coding,
        role: Role::Member,
        description: "Challenges a proposed design or fix so weaknesses surface before merge.",
        prompt: "You are the debater. Attack the proposed design or fix: find the inputs, \
                 states and callers it gets wrong, back each point with code you read, and say \
                 what evidence would settle it.",
        thinking_level: "high",
    },
];

/// Every profile of `mode`, lead first.
pub fn profiles(mode: AppMode) -> impl Iterator<Item = &'static Profile> {
    PROFILES.iter().filter(move |p| p.mode == mode)
}

/// The profile matching an agent: the lead profile matches its name
/// case-insensitively when the agent is a lead; member profiles match by
/// exact name and role.
pub fn profile_for(mode: AppMode, role: Role, name: &str) -> Option<&'static Profile> {
    profiles(mode).find(|p| {
        p.role == role
            && match role {
                Role::Lead => p.name.eq_ignore_ascii_case(name),
                Role::Member => p.name == name,
            }
    })
}

/// The built-in seed Markdown: identity and model settings only, never a
/// capability list, and a comment in place of a prompt.
pub fn seed_markdown(p: &Profile) -> String {
    format!(
        "---\nname: {}\nrole: {}\nthinking_level: {}\n---\n<!-- Built-in {} agent. Its \
         description, prompt and tools are owned by evoflux; text written below this comment is \
         added to its prompt. -->\n",
        p.name,
        p.role.as_str(),
        p.thinking_level,
        p.mode
    )
}

/// Merges a profile prompt with the user's extra prompt. The extra is
/// ignored when empty, the default sentence, or the base prompt itself.
pub fn merge_prompt(base: &str, extra: &str) -> String {
    let extra = extra.trim();
    if extra.is_empty() || extra == DEFAULT_PROMPT || extra == base.trim() {
        base.to_owned()
    } else {
        format!("{base}\n\n## User extra prompt\n\n{extra}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mode_has_the_lead_and_four_members() {
        let names = |m| profiles(m).map(|p| p.name).collect::<Vec<_>>();
        assert_eq!(
            names(AppMode::Work),
            ["evoflux", "executor", "explorer", "consultant", "debate"]
        );
        assert_eq!(
            names(AppMode::Coding),
            ["evoflux", "coder", "explorer", "architect", "debate"]
        );
    }

    #[test]
    fn lead_matches_case_insensitively_members_exactly() {
        assert!(profile_for(AppMode::Work, Role::Lead, "EvoFlux").is_some());
        assert!(profile_for(AppMode::Work, Role::Member, "evoflux").is_none());
        assert!(profile_for(AppMode::Coding, Role::Member, "coder").is_some());
        assert!(profile_for(AppMode::Work, Role::Member, "coder").is_none());
    }

    #[test]
    fn seeds_hold_identity_only() {
        for m in AppMode::ALL {
            for p in profiles(m) {
                let text = seed_markdown(p);
                let doc = evoflux_core::frontmatter::parse(&text).unwrap();
                let keys: Vec<_> = doc.mapping.keys().filter_map(|k| k.as_str()).collect();
                assert_eq!(keys, ["name", "role", "thinking_level"]);
                assert_eq!(super::super::agent_file::strip_html_comments(doc.body), "");
            }
        }
    }

    #[test]
    fn prompt_merge_rules() {
        assert_eq!(merge_prompt("Base", ""), "Base");
        assert_eq!(merge_prompt("Base", DEFAULT_PROMPT), "Base");
        assert_eq!(merge_prompt("Base", " Base "), "Base");
        assert_eq!(
            merge_prompt("Base", "Be terse."),
            "Base\n\n## User extra prompt\n\nBe terse."
        );
    }
}
