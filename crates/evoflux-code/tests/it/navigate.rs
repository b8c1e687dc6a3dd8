//! Fixture repositories in each language with known answers: definitions,
//! callers, callees and implementations across files and modules, shadowed
//! names, overloaded methods; several repositories at once; incremental
//! refresh; and the refusal of anything that is not an exact symbol.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use evoflux_code::{Answer, CodeContext, CodeError, Relation};
use serde_json::{Value, json};
use tempfile::TempDir;

fn repo(name: &str, files: &[(&str, &str)]) -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(name);
    for (path, text) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    (dir, root)
}

fn ask(cc: &mut CodeContext, args: Value) -> Answer {
    match cc.answer(&args) {
        Ok(a) => a,
        Err(e) => panic!("{args}: {e} [{}]", e.code()),
    }
}

fn refused(cc: &mut CodeContext, args: Value) -> CodeError {
    match cc.answer(&args) {
        Ok(a) => panic!("{args} answered: {}", a.render()),
        Err(e) => e,
    }
}

/// `kind symbol path:start` of each match.
fn matches(a: &Answer) -> Vec<String> {
    a.matches
        .iter()
        .map(|e| format!("{} {} {}:{}", e.kind, e.symbol, e.path, e.start_line))
        .collect()
}

/// `symbol path` of each relationship of one kind.
fn related(a: &Answer, relation: Relation) -> Vec<String> {
    a.relationships
        .iter()
        .filter(|r| r.relation == relation)
        .map(|r| match &r.entry {
            Some(e) if e.symbol.is_empty() => format!("{} {}", r.name, e.path),
            Some(e) => format!("{} {}", e.symbol, e.path),
            None => r.name.clone(),
        })
        .collect()
}

const RUST: &[(&str, &str)] = &[
    ("Cargo.toml", "[package]\nname = \"app\"\n"),
    ("src/lib.rs", "pub mod config;\npub mod server;\n"),
    (
        "src/config.rs",
        r#"pub struct Config {
    pub path: String,
}

impl Config {
    pub fn new(path: &str) -> Config {
        Config { path: path.to_owned() }
    }
}

pub trait Source {
    fn read(&self) -> String;
}

pub struct FileSource;
pub struct EnvSource;

impl Source for FileSource {
    fn read(&self) -> String { std::fs::read_to_string("x").unwrap_or_default() }
}

impl Source for EnvSource {
    fn read(&self) -> String { String::new() }
}

pub fn load_config() -> Config {
    Config::new("app.toml")
}
"#,
    ),
    (
        "src/server.rs",
        r#"use crate::config;

pub struct Server {
    config: config::Config,
}

impl Server {
    pub fn new() -> Server {
        let config = config::load_config();
        Server { config }
    }

    pub fn start(&self) {
        self.bind();
    }

    fn bind(&self) {}
}
"#,
    ),
    (
        "src/main.rs",
        "use app::server::Server;\n\nfn main() {\n    let s = Server::new();\n    s.start();\n}\n",
    ),
    ("target/debug/build.rs", "fn ignored() {}\n"),
    (".gitignore", "target/\n"),
];

#[test]
fn rust_definitions_resolve_exactly_and_list_ambiguity() {
    let (_d, root) = repo("app", RUST);
    let mut cc = CodeContext::new(&[root], None);

    let a = ask(
        &mut cc,
        json!({"operation": "definition", "symbol": "Config::new"}),
    );
    assert_eq!(matches(&a), ["method Config::new src/config.rs:6"]);
    assert!(
        a.definitions[0]
            .text
            .contains("Config { path: path.to_owned() }")
    );
    assert_eq!(related(&a, Relation::Container), ["Config src/config.rs"]);
    assert!(
        a.render()
            .contains("## Definitions\n### method Config::new — src/config.rs:6-8 [app @")
    );

    let a = ask(&mut cc, json!({"operation": "definition", "symbol": "new"}));
    assert_eq!(
        matches(&a),
        [
            "method Config::new src/config.rs:6",
            "method Server::new src/server.rs:8"
        ]
    );
    assert!(
        a.limitations
            .iter()
            .any(|l| l.contains("is ambiguous: 2 definitions"))
    );

    let a = ask(
        &mut cc,
        json!({"operation": "definition", "symbol": "new", "path": "src/server.rs"}),
    );
    assert_eq!(matches(&a), ["method Server::new src/server.rs:8"]);

    // `config::load_config` is qualified by its module (the file).
    let a = ask(
        &mut cc,
        json!({"operation": "definition", "symbol": "config::load_config"}),
    );
    assert_eq!(matches(&a), ["function load_config src/config.rs:26"]);

    // Ignored files are not indexed.
    let e = refused(
        &mut cc,
        json!({"operation": "definition", "symbol": "ignored"}),
    );
    assert_eq!(e.code(), "code/unknown-symbol");
}

#[test]
fn rust_callers_and_callees_tell_shadowed_methods_apart() {
    let (_d, root) = repo("app", RUST);
    let mut cc = CodeContext::new(&[root], None);

    let a = ask(
        &mut cc,
        json!({"operation": "callers", "symbol": "Config::new"}),
    );
    assert_eq!(related(&a, Relation::Caller), ["load_config src/config.rs"]);
    let a = ask(
        &mut cc,
        json!({"operation": "callers", "symbol": "Server::new"}),
    );
    assert_eq!(related(&a, Relation::Caller), ["main src/main.rs"]);
    assert_eq!(a.relationships[0].lines, [4]);
    let a = ask(
        &mut cc,
        json!({"operation": "callers", "symbol": "Server::bind"}),
    );
    assert_eq!(
        related(&a, Relation::Caller),
        ["Server::start src/server.rs"]
    );

    let a = ask(
        &mut cc,
        json!({"operation": "callees", "symbol": "Server::new"}),
    );
    assert_eq!(related(&a, Relation::Callee), ["load_config src/config.rs"]);
    let a = ask(&mut cc, json!({"operation": "callees", "symbol": "main"}));
    assert_eq!(
        related(&a, Relation::Callee),
        ["Server::new src/server.rs", "Server::start src/server.rs"]
    );
    let a = ask(
        &mut cc,
        json!({"operation": "callees", "symbol": "FileSource::read"}),
    );
    assert_eq!(
        related(&a, Relation::ExternalCallee),
        ["fs::read_to_string", "unwrap_or_default"]
    );

    let a = ask(
        &mut cc,
        json!({"operation": "impact", "symbol": "Config::new", "depth": 3}),
    );
    let levels: Vec<(String, Option<u8>)> = a
        .relationships
        .iter()
        .map(|r| (r.name.clone(), r.depth))
        .collect();
    assert_eq!(
        levels,
        [
            ("load_config".to_owned(), Some(1)),
            ("Server::new".to_owned(), Some(2)),
            ("main".to_owned(), Some(3)),
        ]
    );
    let a = ask(
        &mut cc,
        json!({"operation": "impact", "symbol": "Config::new", "depth": 1}),
    );
    assert_eq!(a.relationships.len(), 1);
}

#[test]
fn rust_implementations_of_traits_and_their_methods() {
    let (_d, root) = repo("app", RUST);
    let mut cc = CodeContext::new(&[root], None);
    let a = ask(
        &mut cc,
        json!({"operation": "implementations", "symbol": "Source"}),
    );
    assert_eq!(
        related(&a, Relation::Implementation),
        ["FileSource src/config.rs", "EnvSource src/config.rs"]
    );
    let a = ask(
        &mut cc,
        json!({"operation": "implementations", "symbol": "Source::read"}),
    );
    assert_eq!(
        related(&a, Relation::Implementation),
        [
            "FileSource::read src/config.rs",
            "EnvSource::read src/config.rs"
        ]
    );
    let a = ask(
        &mut cc,
        json!({"operation": "implementations", "symbol": "load_config"}),
    );
    assert!(a.relationships.is_empty());
    assert!(a.limitations.iter().any(|l| l.contains("is a function")));
}

#[test]
fn references_outline_and_neighborhood() {
    let (_d, root) = repo("app", RUST);
    let mut cc = CodeContext::new(&[root], None);
    let a = ask(
        &mut cc,
        json!({"operation": "references", "symbol": "Server"}),
    );
    let kinds: Vec<String> = a
        .relationships
        .iter()
        .map(|r| {
            let e = r.entry.as_ref().unwrap();
            format!("{} {}:{}", e.kind, e.path, e.start_line)
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "import src/main.rs:1",
            "type use src/server.rs:7",
            "type use src/server.rs:8",
            "type use src/server.rs:10",
        ]
    );

    let a = ask(
        &mut cc,
        json!({"operation": "outline", "path": "src/server.rs"}),
    );
    assert_eq!(
        matches(&a),
        [
            "type Server src/server.rs:3",
            "method Server::new src/server.rs:8",
            "method Server::start src/server.rs:13",
            "method Server::bind src/server.rs:17",
        ]
    );
    let e = refused(
        &mut cc,
        json!({"operation": "outline", "path": "server.rs"}),
    );
    assert_eq!(e.code(), "code/unknown-file");
    assert!(e.to_string().contains("`src/server.rs`"), "{e}");

    let a = ask(
        &mut cc,
        json!({"operation": "neighborhood", "symbol": "Server::start"}),
    );
    assert_eq!(related(&a, Relation::Container), ["Server src/server.rs"]);
    assert_eq!(
        related(&a, Relation::Sibling),
        ["Server::new src/server.rs", "Server::bind src/server.rs"]
    );
    assert_eq!(related(&a, Relation::Caller), ["main src/main.rs"]);
    assert_eq!(
        related(&a, Relation::Callee),
        ["Server::bind src/server.rs"]
    );
}

#[test]
fn prose_and_unknown_symbols_are_refused_with_candidate_names() {
    let (_d, root) = repo("app", RUST);
    let mut cc = CodeContext::new(&[root], None);
    let e = refused(
        &mut cc,
        json!({"operation": "definition", "symbol": "where is config loaded"}),
    );
    assert_eq!(e.code(), "code/not-a-symbol");
    match &e {
        CodeError::NotASymbol { candidates, .. } => {
            assert_eq!(candidates, &["Config", "config"]);
        }
        other => panic!("{other}"),
    }
    // A name whose words are all in the prose is offered; partial overlap is not.
    let e = refused(
        &mut cc,
        json!({"operation": "callers", "symbol": "who calls load config"}),
    );
    assert!(
        matches!(&e, CodeError::NotASymbol { candidates, .. } if candidates == &["Config", "config", "load_config"]),
        "{e}"
    );
    let e = refused(
        &mut cc,
        json!({"operation": "definition", "symbol": "Confg"}),
    );
    assert!(
        matches!(&e, CodeError::UnknownSymbol { candidates, .. } if candidates == &["Config", "config"]),
        "{e}"
    );
    let e = refused(
        &mut cc,
        json!({"operation": "callers", "symbol": "Client::new"}),
    );
    assert!(
        matches!(&e, CodeError::UnknownSymbol { candidates, .. } if candidates == &["Config::new", "Server::new"]),
        "{e}"
    );
    let e = refused(
        &mut cc,
        json!({"operation": "definition", "query": "config"}),
    );
    assert_eq!(e.code(), "code/unknown-field");
}

#[test]
fn python_classes_bases_and_overrides() {
    let (_d, root) = repo(
        "py",
        &[
            (
                "app/store.py",
                "class Store:\n    def get(self, k):\n        return self.load(k)\n\n    def load(self, k):\n        return None\n\n\nclass Cache(Store):\n    def get(self, k):\n        return super().get(k)\n\n\ndef open_store():\n    return Store()\n",
            ),
            (
                "app/main.py",
                "from app.store import open_store, Cache\n\n\ndef run():\n    s = open_store()\n    s.get(\"k\")\n    Cache().get(\"x\")\n",
            ),
        ],
    );
    let mut cc = CodeContext::new(&[root], None);
    let a = ask(
        &mut cc,
        json!({"operation": "implementations", "symbol": "Store"}),
    );
    assert_eq!(
        related(&a, Relation::Implementation),
        ["Cache app/store.py"]
    );
    let a = ask(
        &mut cc,
        json!({"operation": "implementations", "symbol": "Store.get"}),
    );
    assert_eq!(
        related(&a, Relation::Implementation),
        ["Cache.get app/store.py"]
    );
    let a = ask(
        &mut cc,
        json!({"operation": "callers", "symbol": "open_store"}),
    );
    assert_eq!(related(&a, Relation::Caller), ["run app/main.py"]);
    let a = ask(
        &mut cc,
        json!({"operation": "callers", "symbol": "Store.load"}),
    );
    assert_eq!(related(&a, Relation::Caller), ["Store.get app/store.py"]);
    // `store.open_store`: qualified by its module.
    let a = ask(
        &mut cc,
        json!({"operation": "definition", "symbol": "store.open_store"}),
    );
    assert_eq!(matches(&a), ["function open_store app/store.py:14"]);
}

#[test]
fn typescript_and_javascript_implements_and_extends() {
    let (_d, root) = repo(
        "web",
        &[
            (
                "src/shape.ts",
                "export interface Shape {\n  area(): number;\n}\n\nexport class Circle implements Shape {\n  constructor(private r: number) {}\n  area(): number { return square(this.r) * 3.14; }\n}\n\nexport class Square implements Shape {\n  area(): number { return 1; }\n}\n\nexport function square(x: number): number { return x * x; }\n",
            ),
            (
                "src/main.tsx",
                "import { Shape, Circle } from './shape';\n\nexport function total(shapes: Shape[]): number {\n  return shapes.reduce((n, s) => n + s.area(), 0);\n}\n\nexport const App = () => total([new Circle(2)]);\n",
            ),
            (
                "src/parse.ts",
                "export function parse(x: string): number;\nexport function parse(x: number): number;\nexport function parse(x: any): number { return Number(x); }\n",
            ),
            (
                "legacy/jobs.js",
                "class Base { run() {} }\nclass Job extends Base {\n  run() { this.step(); }\n  step() {}\n}\nfunction start() { new Job().run(); }\n",
            ),
        ],
    );
    let mut cc = CodeContext::new(&[root], None);
    let a = ask(
        &mut cc,
        json!({"operation": "implementations", "symbol": "Shape"}),
    );
    assert_eq!(
        related(&a, Relation::Implementation),
        ["Circle src/shape.ts", "Square src/shape.ts"]
    );
    let a = ask(
        &mut cc,
        json!({"operation": "implementations", "symbol": "Shape.area"}),
    );
    assert_eq!(
        related(&a, Relation::Implementation),
        ["Circle.area src/shape.ts", "Square.area src/shape.ts"]
    );
    let a = ask(&mut cc, json!({"operation": "callers", "symbol": "square"}));
    assert_eq!(related(&a, Relation::Caller), ["Circle.area src/shape.ts"]);
    let a = ask(&mut cc, json!({"operation": "callers", "symbol": "total"}));
    assert_eq!(related(&a, Relation::Caller), ["App src/main.tsx"]);
    // Overloads are each a definition; the ambiguity is stated.
    let a = ask(
        &mut cc,
        json!({"operation": "definition", "symbol": "parse"}),
    );
    assert_eq!(
        matches(&a),
        [
            "function parse src/parse.ts:1",
            "function parse src/parse.ts:2",
            "function parse src/parse.ts:3",
        ]
    );
    assert!(
        a.limitations
            .iter()
            .any(|l| l.contains("is ambiguous: 3 definitions"))
    );
    let a = ask(
        &mut cc,
        json!({"operation": "implementations", "symbol": "Base"}),
    );
    assert_eq!(
        related(&a, Relation::Implementation),
        ["Job legacy/jobs.js"]
    );
    let a = ask(
        &mut cc,
        json!({"operation": "callers", "symbol": "Job.step"}),
    );
    assert_eq!(related(&a, Relation::Caller), ["Job.run legacy/jobs.js"]);
}

#[test]
fn go_interfaces_are_implemented_structurally() {
    let (_d, root) = repo(
        "gosvc",
        &[
            (
                "store/store.go",
                "package store\n\ntype Reader interface {\n\tRead(k string) string\n\tClose()\n}\n\ntype Disk struct{}\n\nfunc (d *Disk) Read(k string) string { return d.path(k) }\nfunc (d *Disk) Close() {}\nfunc (d *Disk) path(k string) string { return k }\n\ntype Mem struct{}\n\nfunc (m Mem) Read(k string) string { return k }\nfunc (m Mem) Close() {}\n\ntype Partial struct{}\n\nfunc (p Partial) Read(k string) string { return k }\n\nfunc NewDisk() *Disk { return &Disk{} }\n",
            ),
            (
                "main.go",
                "package main\n\nimport \"example.com/gosvc/store\"\n\nfunc main() {\n\td := store.NewDisk()\n\td.Read(\"x\")\n}\n",
            ),
        ],
    );
    let mut cc = CodeContext::new(&[root], None);
    let a = ask(
        &mut cc,
        json!({"operation": "implementations", "symbol": "Reader"}),
    );
    assert_eq!(
        related(&a, Relation::Implementation),
        ["Disk store/store.go", "Mem store/store.go"]
    );
    let a = ask(
        &mut cc,
        json!({"operation": "callers", "symbol": "store.NewDisk"}),
    );
    assert_eq!(related(&a, Relation::Caller), ["main main.go"]);
    // Callees follow the same rule: the package-qualified call resolves.
    let a = ask(&mut cc, json!({"operation": "callees", "symbol": "main"}));
    let callees = related(&a, Relation::Callee);
    assert!(
        callees.contains(&"NewDisk store/store.go".to_owned()),
        "{callees:?}"
    );
    let a = ask(
        &mut cc,
        json!({"operation": "callers", "symbol": "Disk.path"}),
    );
    assert_eq!(related(&a, Relation::Caller), ["Disk.Read store/store.go"]);
}

#[test]
fn several_repositories_are_searched_and_named() {
    let (_a, lib) = repo(
        "configlib",
        &[(
            "configlib/parse.py",
            "def parse_config(text):\n    return dict()\n",
        )],
    );
    let (_b, app) = repo(
        "service",
        &[(
            "service/boot.py",
            "from configlib.parse import parse_config\n\n\ndef boot():\n    return parse_config('x')\n",
        )],
    );
    let mut cc = CodeContext::new(&[app.clone(), lib.clone()], None);
    let a = ask(
        &mut cc,
        json!({"operation": "callers", "symbol": "parse_config"}),
    );
    assert_eq!(a.matches[0].repository, "configlib");
    assert_eq!(
        Path::new(&a.matches[0].path),
        lib.join("configlib/parse.py"),
        "with several roots, paths are absolute"
    );
    let callers: Vec<(String, String)> = a
        .relationships
        .iter()
        .map(|r| {
            let e = r.entry.as_ref().unwrap();
            (e.repository.clone(), e.symbol.clone())
        })
        .collect();
    assert_eq!(callers, [("service".to_owned(), "boot".to_owned())]);
    let names: Vec<&str> = a.repositories.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["service", "configlib"]);

    let e = refused(
        &mut cc,
        json!({"operation": "definition", "symbol": "parse_config", "repository": "service"}),
    );
    assert_eq!(e.code(), "code/unknown-symbol");
    let e = refused(
        &mut cc,
        json!({"operation": "definition", "symbol": "boot", "repository": "nope"}),
    );
    assert_eq!(e.code(), "code/unknown-repository");

    // A relative path both repositories have is ambiguous, not guessed.
    std::fs::write(app.join("setup.py"), "def setup():\n    pass\n").unwrap();
    std::fs::write(lib.join("setup.py"), "def setup():\n    pass\n").unwrap();
    let e = refused(&mut cc, json!({"operation": "outline", "path": "setup.py"}));
    assert_eq!(e.code(), "code/ambiguous-file");
    let a = ask(
        &mut cc,
        json!({"operation": "outline", "path": "setup.py", "repository": "configlib"}),
    );
    assert_eq!(a.matches[0].repository, "configlib");
}

#[test]
fn an_edit_reparses_only_its_file_and_changes_the_answer() {
    let (_d, root) = repo("app", RUST);
    let cache = tempfile::tempdir().unwrap();
    let mut cc = CodeContext::new(std::slice::from_ref(&root), Some(cache.path()));
    let first = cc.refresh(&|_, _, _| {});
    assert_eq!(first[0].1.parsed.len(), 4, "{:?}", first[0].1.parsed);

    let a = ask(
        &mut cc,
        json!({"operation": "callers", "symbol": "Config::new"}),
    );
    assert_eq!(related(&a, Relation::Caller), ["load_config src/config.rs"]);

    std::fs::write(
        root.join("src/main.rs"),
        "use app::server::Server;\nuse app::config::Config;\n\nfn main() {\n    let s = Server::new();\n    s.start();\n    let _c = Config::new(\"other\");\n}\n",
    )
    .unwrap();
    let again = cc.refresh(&|_, _, _| {});
    assert_eq!(again[0].1.parsed, ["src/main.rs"]);
    let a = ask(
        &mut cc,
        json!({"operation": "callers", "symbol": "Config::new"}),
    );
    assert_eq!(
        related(&a, Relation::Caller),
        ["load_config src/config.rs", "main src/main.rs"]
    );

    // A new session on the same cache parses nothing.
    let mut next = CodeContext::new(std::slice::from_ref(&root), Some(cache.path()));
    let loaded = next.refresh(&|_, _, _| {});
    assert!(loaded[0].1.parsed.is_empty(), "{:?}", loaded[0].1);
    assert_eq!(loaded[0].1.reused, 4);
}

#[test]
fn every_entry_carries_the_revision_it_was_read_at() {
    let (_d, root) = repo("app", RUST);
    let mut cc = CodeContext::new(std::slice::from_ref(&root), None);
    let a = ask(
        &mut cc,
        json!({"operation": "definition", "symbol": "load_config"}),
    );
    let before = a.matches[0].revision.clone();
    assert_eq!(before.len(), 16);
    std::fs::write(
        root.join("src/config.rs"),
        "pub fn load_config() -> u8 {\n    1\n}\n",
    )
    .unwrap();
    let a = ask(
        &mut cc,
        json!({"operation": "definition", "symbol": "load_config"}),
    );
    assert_ne!(a.matches[0].revision, before);
    assert_eq!(a.matches[0].start_line, 1);
}

#[test]
fn java_callers_follow_fields_parameters_and_implicit_this() {
    let (_d, root) = repo(
        "jsvc",
        &[
            (
                "src/app/Store.java",
                "package app;\n\npublic class Store implements Source {\n    public String get(String k) { return k; }\n    public String check() { return get(\"x\"); }\n}\n",
            ),
            (
                "src/app/Source.java",
                "package app;\n\npublic interface Source {\n    String get(String k);\n}\n",
            ),
            (
                "src/app/Cache.java",
                "package app;\n\npublic class Cache {\n    private Store store;\n    public String warm(Store s) {\n        return store.get(\"a\")\n            + s.get(\"b\");\n    }\n}\n",
            ),
            (
                "src/app/Other.java",
                "package app;\n\npublic class Other {\n    public String get(String k) { return k; }\n    void use(Other o) { o.get(\"z\"); }\n}\n",
            ),
        ],
    );
    let mut cc = CodeContext::new(&[root], None);
    let a = ask(
        &mut cc,
        json!({"operation": "callers", "symbol": "Store.get"}),
    );
    assert_eq!(
        related(&a, Relation::Caller),
        [
            "Cache.warm src/app/Cache.java",
            "Store.check src/app/Store.java"
        ],
        "{}",
        a.render()
    );
    // A field named bare (`store.get`) and a parameter (`s.get`).
    assert_eq!(a.relationships[0].lines, [6, 7]);
    let a = ask(
        &mut cc,
        json!({"operation": "implementations", "symbol": "Source"}),
    );
    assert_eq!(
        related(&a, Relation::Implementation),
        ["Store src/app/Store.java"]
    );
}

#[test]
fn c_and_cpp_callers_cross_headers_and_sources() {
    let (_d, root) = repo(
        "native",
        &[
            (
                "src/disk.h",
                "class Disk {\n public:\n  int read(int k);\n};\nint helper(int k);\n",
            ),
            (
                "src/disk.cpp",
                "#include \"disk.h\"\nint Disk::read(int k) { return helper(k); }\nint helper(int k) { return k; }\n",
            ),
            (
                "src/main.cpp",
                "#include \"disk.h\"\nint main() {\n  Disk d;\n  return d.read(1) + helper(2);\n}\n",
            ),
            (
                "lib/sum.c",
                "int sum(int a, int b) { return a + b; }\nint twice(int a) { return sum(a, a); }\n",
            ),
        ],
    );
    let mut cc = CodeContext::new(&[root], None);
    let a = ask(
        &mut cc,
        json!({"operation": "callers", "symbol": "Disk::read", "path": "src/disk.cpp"}),
    );
    assert_eq!(related(&a, Relation::Caller), ["main src/main.cpp"]);
    assert_eq!(
        a.relationships[0].certainty,
        Some(evoflux_code::Certainty::Exact)
    );
    let a = ask(
        &mut cc,
        json!({"operation": "callers", "symbol": "helper", "path": "src/disk.cpp"}),
    );
    assert_eq!(
        related(&a, Relation::Caller),
        ["Disk::read src/disk.cpp", "main src/main.cpp"]
    );
    // `main.cpp` includes `disk.h`, the header of `disk.cpp`.
    assert_eq!(
        a.relationships[1].basis,
        Some(evoflux_code::Basis::Imported)
    );
    let a = ask(&mut cc, json!({"operation": "callers", "symbol": "sum"}));
    assert_eq!(related(&a, Relation::Caller), ["twice lib/sum.c"]);
}

#[test]
fn a_function_imported_through_a_reexport_is_called_exactly() {
    let (_d, root) = repo(
        "pkg",
        &[
            (
                "lib/_internal.py",
                "def native(s, encoding=\"ascii\"):\n    return s\n",
            ),
            ("lib/utils.py", "from ._internal import native\n"),
            (
                "tests/test_utils.py",
                "from lib.utils import native\n\n\ndef test_native():\n    assert native(\"x\") == \"x\"\n",
            ),
            (
                "other.py",
                "from elsewhere import native\n\n\ndef run():\n    return native(\"y\")\n",
            ),
        ],
    );
    let mut cc = CodeContext::new(&[root], None);
    let a = ask(&mut cc, json!({"operation": "callers", "symbol": "native"}));
    let found: Vec<(String, Option<evoflux_code::Basis>)> = a
        .relationships
        .iter()
        .map(|r| (r.name.clone(), r.basis))
        .collect();
    assert_eq!(
        found,
        [
            (
                "test_native".to_owned(),
                Some(evoflux_code::Basis::Imported)
            ),
            (
                "run".to_owned(),
                Some(evoflux_code::Basis::ImportedElsewhere)
            ),
        ],
        "{}",
        a.render()
    );
}
