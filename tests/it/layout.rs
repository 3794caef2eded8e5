//! The shape of `src/`: no import cycle between its files, no file or function past a size a
//! newcomer can read in one sitting, and no type spread over files in all but syntax.
//!
//! A file is a node of the graph; an arrow is any path that reaches into another file: `use
//! crate::…`, a `crate::…` path in code, `super::…`, a `use` or a path through a child module
//! (`pub use` re-exports included, so a path through `crate::Report` reaches `lib.rs` and, from
//! there, `report/`). Comments and string literals are left out, and so are `#[cfg(test)]`
//! items (test modules may reach anywhere: they are not part of the structure a change has to
//! respect).
//!
//! Nor may the children of one module (each with the files under it) import each other in a
//! circle: `check/job.rs` and `check/walk.rs` may both lean on `check.rs`, not on each other both
//! ways.
//!
//! A type is one room: its `impl` blocks are in the file that defines it, and no free function
//! of another file takes it as `&mut` first parameter (such a function is a method of the type
//! in all but syntax, out of sight of a reader of the type's file). And a ceiling met at its
//! edge shapes the code more than the design does: only a few functions and files may come
//! within 10 % of theirs.
//!
//! `cargo test --test it layout::measure -- --ignored --nocapture` prints the figures: the
//! module graph (files, arrows, cycles, circles, each top-level module's arrows inside, in and
//! out), the longest files and functions, how their sizes spread below the ceilings, the cycles,
//! and who takes another file's struct as `&mut` first parameter (of another tree with
//! `PULLCHECK_LAYOUT_SRC=DIR`, e.g. `git archive <commit> src | tar -x -C /tmp/before`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Lines a source file may have, its test modules aside.
const MAX_FILE_LINES: usize = 800;
/// Lines a function may have, from `fn` to its closing brace.
const MAX_FN_LINES: usize = 120;

/// Files allowed over [`MAX_FILE_LINES`], with the size they may not grow past. None today:
/// a file that grows past the limit is split along what it holds.
const LONG_FILES: &[(&str, usize)] = &[];

/// Functions allowed over [`MAX_FN_LINES`], with the size they may not grow past
/// (`file:Type::name`). None today: the reasons table, one row per reason, is the `reasons!`
/// macro's input, which declares the enum and its `about` in one form.
const LONG_FNS: &[(&str, usize)] = &[];

/// Types allowed `impl` blocks outside the file that defines them (`file:Type`), with the files
/// those are in. None today: a type that needs a second file is split into types of their
/// own, or the second file works through the first's API.
const SPREAD_TYPES: &[(&str, &[&str])] = &[];

/// Functions within 10 % of [`MAX_FN_LINES`] there may be, at most: a function written up to
/// the ceiling is one the limit shaped, not what it does.
const MAX_NEAR_CEILING_FNS: usize = 2;
/// Files within 10 % of [`MAX_FILE_LINES`] (test modules aside) there may be, at most.
const MAX_NEAR_CEILING_FILES: usize = 4;

/// Free functions allowed a first parameter `&mut T` of a struct `T` defined in another file
/// (`file:function`). None today.
const MUT_BORROWERS: &[&str] = &[];

#[test]
fn no_import_cycles() {
    let crate_ = Crate::read();
    let cycles = crate_.cycles();
    assert!(
        cycles.is_empty(),
        "import cycles between the files of src/:\n{}",
        crate_.describe(&cycles)
    );
    let circles = crate_.sibling_circles();
    assert!(
        circles.is_empty(),
        "circles between the children of one module (each child with the files under it):\n{}",
        crate_.describe_circles(&circles)
    );
}

#[test]
fn no_file_past_its_size() {
    let crate_ = Crate::read();
    let mut over = Vec::new();
    for (name, file) in &crate_.files {
        let limit = LONG_FILES
            .iter()
            .find(|(n, _)| n == name)
            .map_or(MAX_FILE_LINES, |(_, l)| *l);
        if file.lines > limit {
            over.push(format!("{name}: {} lines (at most {limit})", file.lines));
        }
    }
    assert!(
        over.is_empty(),
        "files too long, test modules aside:\n{}",
        over.join("\n")
    );
}

#[test]
fn no_function_past_its_size() {
    let crate_ = Crate::read();
    let mut over = Vec::new();
    for f in crate_.functions() {
        let key = format!("{}:{}", f.file, f.name);
        let limit = LONG_FNS
            .iter()
            .find(|(n, _)| *n == key)
            .map_or(MAX_FN_LINES, |(_, l)| *l);
        if f.lines > limit {
            over.push(format!(
                "{key} (line {}): {} lines (at most {limit})",
                f.line, f.lines
            ));
        }
    }
    assert!(over.is_empty(), "functions too long:\n{}", over.join("\n"));
    let functions: BTreeSet<String> = crate_
        .functions()
        .iter()
        .map(|f| format!("{}:{}", f.file, f.name))
        .collect();
    for (name, _) in LONG_FNS {
        assert!(
            functions.contains(*name),
            "LONG_FNS names {name}, which is no longer a function: take it off the list"
        );
    }
}

/// One type, one room: a type's `impl` blocks (inherent or of a trait) live in the file that
/// defines it (but for [`SPREAD_TYPES`], none today).
#[test]
fn every_type_s_impl_blocks_are_in_the_file_that_defines_it() {
    let spread = Crate::read().spread_types();
    let mut wrong = Vec::new();
    for (ty, files) in &spread {
        let allowed: BTreeSet<&str> = SPREAD_TYPES
            .iter()
            .find(|(t, _)| t == ty)
            .map(|(_, f)| f.iter().copied().collect())
            .unwrap_or_default();
        for file in files {
            if !allowed.contains(file.as_str()) {
                wrong.push(format!("src/{ty}: impl in src/{file}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "impl blocks outside the file that defines their type:\n{}",
        wrong.join("\n")
    );
    for (ty, files) in SPREAD_TYPES {
        for file in *files {
            assert!(
                spread.get(*ty).is_some_and(|f| f.contains(*file)),
                "SPREAD_TYPES lets {ty} have impl blocks in {file}, which has none now: take it \
                 off the list"
            );
        }
    }
}

/// A free function whose first parameter is `&mut` of a struct another file defines is that
/// struct's method in all but syntax: a reader asking what may change the struct must open that
/// other file too. It becomes a method of the struct (in its file), or works through the
/// struct's methods from a type of its own. `&mut self`, generic parameters and types from
/// outside the crate are not counted; nor are methods (see `measure`).
#[test]
fn no_free_function_takes_another_file_s_struct_as_mut_first_parameter() {
    let borrows = Crate::read().mut_borrows();
    let free: Vec<&MutBorrow> = borrows.iter().filter(|b| b.method_of.is_none()).collect();
    let wrong: Vec<String> = free
        .iter()
        .filter(|b| !MUT_BORROWERS.contains(&b.key().as_str()))
        .map(|b| b.describe())
        .collect();
    assert!(
        wrong.is_empty(),
        "free functions whose first parameter is `&mut` of another file's struct (make them \
         methods of that struct, or reach it through its methods):\n{}",
        wrong.join("\n")
    );
    for name in MUT_BORROWERS {
        assert!(
            free.iter().any(|b| b.key() == *name),
            "MUT_BORROWERS names {name}, which no longer takes another file's struct as `&mut` \
             first parameter: take it off the list"
        );
    }
}

/// The signature reader behind the `&mut` rule: what it takes for the first parameter's type,
/// and what it leaves out.
#[test]
fn first_parameters_are_read_as_written() {
    let read = |src: &str| {
        let sigs = signatures(&lex(src));
        sigs.into_iter()
            .map(|s| {
                let generics: Vec<String> = s.generics.into_iter().collect();
                format!(
                    "{}{} <{}> {}",
                    s.method_of.map(|t| t + "::").unwrap_or_default(),
                    s.name,
                    generics.join(","),
                    s.mut_first.join("::")
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        read(
            "fn a<'x, T: Fn() -> U, const N: usize>(t: &'x mut T, r: &mut Route) {}\n\
             fn b(w: &mut dyn Write, r: &mut Route) {}\n\
             fn c(mut r: &mut tree::Tree<'_>) {}\n\
             fn d(r: &Route) {}\n\
             impl Certs { fn e(&self, r: &mut Route) { fn f(x: &mut X) {} } }\n\
             trait Each { fn g(&mut self, t: &Tree); }"
        ),
        [
            "a <N,T> T",
            "b <> ",
            "c <> tree::Tree",
            "d <> ",
            "Certs::e <> Route",
            "f <> X",
            "Each::g <> ",
        ]
    );
}

/// A ceiling met at its edge shapes the code more than the design does: at most
/// [`MAX_NEAR_CEILING_FNS`] functions and [`MAX_NEAR_CEILING_FILES`] files within 10 % of theirs.
#[test]
fn few_functions_and_files_near_their_ceiling() {
    let crate_ = Crate::read();
    let fns: Vec<String> = crate_
        .functions()
        .iter()
        .filter(|f| near_ceiling(f.lines, MAX_FN_LINES))
        .map(|f| format!("src/{}:{} {} ({} lines)", f.file, f.line, f.name, f.lines))
        .collect();
    assert!(
        fns.len() <= MAX_NEAR_CEILING_FNS,
        "{} functions within 10 % of {MAX_FN_LINES} lines, at most {MAX_NEAR_CEILING_FNS}: split \
         one along what it does:\n{}",
        fns.len(),
        fns.join("\n")
    );
    let files: Vec<String> = crate_
        .files
        .iter()
        .filter(|(_, f)| near_ceiling(f.lines, MAX_FILE_LINES))
        .map(|(name, f)| format!("src/{name} ({} lines, test modules aside)", f.lines))
        .collect();
    assert!(
        files.len() <= MAX_NEAR_CEILING_FILES,
        "{} files within 10 % of {MAX_FILE_LINES} lines, at most {MAX_NEAR_CEILING_FILES}: split \
         one along what it holds:\n{}",
        files.len(),
        files.join("\n")
    );
}

/// The two layout lists a newcomer reads, `src/lib.rs`'s "Layout" section and CONTRIBUTING.md's
/// tree, name every module and file there is: a file added without a word there fails here.
#[test]
fn the_layout_lists_name_every_module_and_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let crate_ = Crate::read();
    let lib_text = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let docs: String = lib_text
        .lines()
        .filter(|l| l.starts_with("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut unnamed = Vec::new();
    // The modules lib.rs declares: a module path of one name.
    for module in crate_.modules.keys() {
        if let [name] = module.as_slice()
            && !docs.contains(&format!("`{name}`"))
        {
            unnamed.push(format!("src/lib.rs's Layout: module {name}"));
        }
    }
    let contributing = std::fs::read_to_string(root.join("CONTRIBUTING.md")).unwrap();
    let tree = contributing
        .split("\n```\n")
        .nth(1)
        .expect("CONTRIBUTING.md's first code block: the tree of src/");
    for name in crate_.files.keys().filter(|n| *n != "lib.rs") {
        // A file is named by its own name, or (under a folder) by the folder's.
        let parts: Vec<&str> = name.split('/').collect();
        let file = parts[parts.len() - 1];
        let folder = parts.len().checked_sub(2).map(|i| format!("{}/", parts[i]));
        if !tree.contains(file) && !folder.is_some_and(|f| tree.contains(&f)) {
            unnamed.push(format!("CONTRIBUTING.md's tree: src/{name}"));
        }
    }
    assert!(unnamed.is_empty(), "not named:\n{}", unnamed.join("\n"));
}

/// Prints the figures (not a check): the longest files and functions, and every cycle.
#[test]
#[ignore = "prints figures; run with --ignored --nocapture"]
fn measure() {
    let crate_ = Crate::read();
    print!("{}", crate_.graph_figures());
    let mut files: Vec<_> = crate_
        .files
        .iter()
        .map(|(n, f)| (f.lines, f.total, n))
        .collect();
    files.sort_unstable_by(|a, b| b.cmp(a));
    println!("longest files (lines without test modules, all lines):");
    for (lines, total, name) in files.iter().take(10) {
        println!("  {lines:5} {total:5} src/{name}");
    }
    let mut by_total = files.clone();
    by_total.sort_unstable_by_key(|f| std::cmp::Reverse(f.1));
    println!("longest files (all lines):");
    for (_, total, name) in by_total.iter().take(10) {
        println!("  {total:5} src/{name}");
    }
    let mut fns = crate_.functions();
    fns.sort_unstable_by_key(|f| std::cmp::Reverse(f.lines));
    println!("longest functions (lines):");
    for f in fns.iter().take(10) {
        println!("  {:5} src/{}:{} {}", f.lines, f.file, f.line, f.name);
    }
    let cycles = crate_.cycles();
    println!("import cycles: {}", cycles.len());
    print!("{}", crate_.describe(&cycles));
    let circles = crate_.sibling_circles();
    println!(
        "circles between the children of one module: {}",
        circles.len()
    );
    print!("{}", crate_.describe_circles(&circles));
    let spread = crate_.spread_types();
    println!(
        "types with impl blocks outside the file that defines them: {}",
        spread.len()
    );
    for (ty, files) in &spread {
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        println!("  src/{ty}: also {}", files.join(", "));
    }
    let fn_lines: Vec<usize> = fns.iter().map(|f| f.lines).collect();
    let file_lines: Vec<usize> = files.iter().map(|f| f.0).collect();
    for (what, lines, ceiling) in [
        ("functions", &fn_lines, MAX_FN_LINES),
        ("files", &file_lines, MAX_FILE_LINES),
    ] {
        println!("{what}: {}", distribution(lines, ceiling));
    }
    println!("functions within 10 % of the ceiling:");
    for f in fns.iter().filter(|f| near_ceiling(f.lines, MAX_FN_LINES)) {
        println!("  {:5} src/{}:{} {}", f.lines, f.file, f.line, f.name);
    }
    println!("files within 10 % of the ceiling:");
    for (lines, _, name) in files.iter().filter(|f| near_ceiling(f.0, MAX_FILE_LINES)) {
        println!("  {lines:5} src/{name}");
    }
    let borrows = crate_.mut_borrows();
    for (what, methods) in [("free functions", false), ("methods", true)] {
        let these: Vec<&MutBorrow> = borrows
            .iter()
            .filter(|b| b.method_of.is_some() == methods)
            .collect();
        println!(
            "{what} whose first parameter (after self) is `&mut` of another file's struct: {}",
            these.len()
        );
        for b in these {
            println!("  {}", b.describe());
        }
    }
}

/// Whether `size` is within 10 % of `ceiling`.
fn near_ceiling(size: usize, ceiling: usize) -> bool {
    size * 10 >= ceiling * 9
}

/// How sizes spread below their ceiling: the median, the 90th percentile, the largest, and how
/// many are within 10 % of the ceiling (a limit met at its edge shapes the code more than the
/// design does).
fn distribution(sizes: &[usize], ceiling: usize) -> String {
    let mut sorted = sizes.to_vec();
    sorted.sort_unstable();
    let at = |q: usize| {
        sorted
            .get((sorted.len() * q / 100).min(sorted.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    let near = sorted.iter().filter(|&&n| near_ceiling(n, ceiling)).count();
    format!(
        "{} in all, median {} lines, p90 {}, largest {}, {near} within 10 % of the ceiling ({ceiling})",
        sorted.len(),
        at(50),
        at(90),
        sorted.last().copied().unwrap_or(0)
    )
}

/// One source file: its module path, and what is left of its tokens once the test items are out.
struct File {
    module: Vec<String>,
    tokens: Vec<Token>,
    /// Lines, the `#[cfg(test)]` items aside.
    lines: usize,
    /// Lines, all of them.
    total: usize,
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: usize,
}

struct Function {
    file: String,
    name: String,
    line: usize,
    lines: usize,
}

/// A function whose first parameter (after `self`, for a method) is `&mut` of a struct that
/// another file defines.
struct MutBorrow {
    file: String,
    function: String,
    line: usize,
    /// The struct, and the file that defines it.
    ty: String,
    home: String,
    /// The type whose `impl` (or trait) block the function is in; `None`: a free function.
    method_of: Option<String>,
}

impl MutBorrow {
    /// `file:function`, as [`MUT_BORROWERS`] names it.
    fn key(&self) -> String {
        match &self.method_of {
            Some(ty) => format!("{}:{ty}::{}", self.file, self.function),
            None => format!("{}:{}", self.file, self.function),
        }
    }

    fn describe(&self) -> String {
        format!(
            "src/{}:{} {}: first parameter `&mut {}`, a struct of src/{}",
            self.file,
            self.line,
            self.key(),
            self.ty,
            self.home
        )
    }
}

struct Crate {
    /// By name relative to `src/` (`registry/mod.rs`).
    files: BTreeMap<String, File>,
    /// Module path → file name.
    modules: BTreeMap<Vec<String>, String>,
}

/// An arrow: from one file to another, with the paths that make it.
type Edges = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

impl Crate {
    fn read() -> Crate {
        // Another tree's figures (a checkout of an older commit, for a before and after):
        // `PULLCHECK_LAYOUT_SRC=/path/to/src`.
        let src = std::env::var_os("PULLCHECK_LAYOUT_SRC").map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            PathBuf::from,
        );
        let mut paths = Vec::new();
        walk(&src, &mut paths);
        let mut files = BTreeMap::new();
        let mut test_only = BTreeSet::new();
        for path in paths {
            let name = path
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            // The binary speaks to the library by its crate name, as any user would.
            if name == "main.rs" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let module = module_of(&name);
            let (tokens, test_lines, test_mods) = strip_tests(lex(&text));
            for m in test_mods {
                let mut child = module.clone();
                child.push(m);
                test_only.insert(child);
            }
            let total = text.lines().count();
            let lines = total - test_lines;
            files.insert(
                name,
                File {
                    module,
                    tokens,
                    lines,
                    total,
                },
            );
        }
        files.retain(|_, f| !test_only.iter().any(|t| f.module.starts_with(t)));
        let modules = files
            .iter()
            .map(|(n, f)| (f.module.clone(), n.clone()))
            .collect();
        Crate { files, modules }
    }

    fn is_module(&self, path: &[String]) -> bool {
        self.modules.contains_key(path)
    }

    /// The file a path (made absolute) lands in: the deepest file module it goes through, or,
    /// when that module re-exports the name from one of its own submodules (`lib.rs`'s `pub use
    /// check::Options`), the file it comes from.
    fn resolve(&self, path: &[String], hops: usize) -> String {
        let mut depth = 0;
        for i in 1..=path.len() {
            if self.is_module(&path[..i]) {
                depth = i;
            } else {
                break;
            }
        }
        let module = &path[..depth];
        let file = &self.modules[module];
        if let (Some(name), true) = (path.get(depth), hops < 8) {
            for reach in paths(&self.files[file].tokens) {
                let seen = reach.reexport.as_deref();
                if seen != Some(name) && seen != Some("*") {
                    continue;
                }
                let Some(mut target) = self.absolute(module, &reach.path) else {
                    continue;
                };
                if target.len() > module.len() && target.starts_with(module) {
                    if seen == Some("*") {
                        target.push(name.clone());
                    }
                    target.extend(path[depth + 1..].iter().cloned());
                    return self.resolve(&target, hops + 1);
                }
            }
        }
        file.clone()
    }

    /// Makes a path seen in `module` absolute, or `None` when it leaves the crate (or names
    /// something local, not a module).
    fn absolute(&self, module: &[String], path: &[String]) -> Option<Vec<String>> {
        let first = path.first()?;
        let (mut base, rest) = match first.as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (module.to_vec(), &path[1..]),
            "super" => {
                let mut base = module.to_vec();
                let mut i = 0;
                while path.get(i).is_some_and(|s| s == "super") {
                    base.pop()?;
                    i += 1;
                }
                (base, &path[i..])
            }
            _ => {
                let mut child = module.to_vec();
                child.push(first.clone());
                if !self.is_module(&child) {
                    return None;
                }
                (module.to_vec(), path)
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    fn edges(&self) -> Edges {
        let mut edges = Edges::new();
        for (name, file) in &self.files {
            for reach in paths(&file.tokens) {
                let Some(abs) = self.absolute(&file.module, &reach.path) else {
                    continue;
                };
                let to = self.resolve(&abs, 0);
                if to == *name {
                    continue;
                }
                edges
                    .entry(name.clone())
                    .or_default()
                    .entry(to)
                    .or_default()
                    .insert(reach.path.join("::"));
            }
        }
        edges
    }

    /// The strongly connected components of more than one file (Tarjan's algorithm).
    fn cycles(&self) -> Vec<Vec<String>> {
        let arrows: BTreeMap<String, BTreeSet<String>> = self
            .edges()
            .into_iter()
            .map(|(from, to)| (from, to.into_keys().collect()))
            .collect();
        let mut out: Vec<Vec<String>> = strongly_connected(&arrows)
            .into_iter()
            // The files of one module (a `mod.rs` and the files under it) may lean on each
            // other: the parent is made of its children, and they reach back with `super::`.
            .filter(|c| {
                let first = &self.files[&c[0]].module;
                let shared = (0..first.len())
                    .take_while(|&d| {
                        c.iter()
                            .all(|n| self.files[n].module.get(d) == first.get(d))
                    })
                    .count();
                shared == 0
            })
            .collect();
        out.sort();
        out
    }

    /// Circles between the children of one module: for each module, its child modules (each
    /// standing for the files under it) and the arrows between them, the module's own file left
    /// out (a parent is made of its children, and they may lean on it with `super::`). Each
    /// circle is its children's module paths.
    fn sibling_circles(&self) -> Vec<Vec<String>> {
        let edges = self.edges();
        let mut out = Vec::new();
        for parent in self.modules.keys() {
            let child_of = |file: &str| {
                let m = &self.files[file].module;
                (m.len() > parent.len() && m.starts_with(parent))
                    .then(|| m[..=parent.len()].join("::"))
            };
            let mut arrows: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for (from, tos) in &edges {
                let Some(a) = child_of(from) else { continue };
                for to in tos.keys() {
                    match child_of(to) {
                        Some(b) if b != a => {
                            arrows.entry(a.clone()).or_default().insert(b);
                        }
                        _ => {}
                    }
                }
            }
            out.extend(strongly_connected(&arrows));
        }
        out.sort();
        out.dedup();
        out
    }

    /// Each circle of [`Crate::sibling_circles`] with the file arrows that make it.
    fn describe_circles(&self, circles: &[Vec<String>]) -> String {
        let edges = self.edges();
        let under = |file: &str, child: &str| {
            let child: Vec<&str> = child.split("::").collect();
            let m = &self.files[file].module;
            m.len() >= child.len() && m.iter().zip(&child).all(|(a, b)| a == b)
        };
        let mut s = String::new();
        for (i, circle) in circles.iter().enumerate() {
            let _ = writeln!(s, "circle {}: {}", i + 1, circle.join(", "));
            for (from, tos) in &edges {
                let Some(a) = circle.iter().find(|c| under(from, c)) else {
                    continue;
                };
                for (to, names) in tos {
                    if circle.iter().any(|c| c != a && under(to, c)) {
                        let names: Vec<&str> = names.iter().map(String::as_str).collect();
                        let _ = writeln!(s, "  {from} -> {to}: {}", names.join(", "));
                    }
                }
            }
        }
        s
    }

    /// Each cycle with the arrows inside it and the paths that make each arrow.
    fn describe(&self, cycles: &[Vec<String>]) -> String {
        let edges = self.edges();
        let mut s = String::new();
        for (i, cycle) in cycles.iter().enumerate() {
            let _ = writeln!(
                s,
                "cycle {} ({} files): {}",
                i + 1,
                cycle.len(),
                cycle.join(", ")
            );
            for from in cycle {
                for (to, names) in edges.get(from).into_iter().flatten() {
                    if cycle.contains(to) {
                        let names: Vec<&str> = names.iter().map(String::as_str).collect();
                        let _ = writeln!(s, "  {from} -> {to}: {}", names.join(", "));
                    }
                }
            }
        }
        s
    }

    /// The types whose `impl` blocks (inherent or of a trait) are not all in the file that
    /// defines them: the type, as `file:Type` of its definition, and the other files with its
    /// `impl` blocks. A name defined in several files (`Metrics`) is taken to be the one whose
    /// module is nearest the `impl`'s.
    fn spread_types(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut defined: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, file) in &self.files {
            for pair in file.tokens.windows(2) {
                if let (Tok::Ident(kw), Tok::Ident(ty)) = (&pair[0].tok, &pair[1].tok)
                    && matches!(kw.as_str(), "struct" | "enum" | "union" | "trait")
                {
                    defined.entry(ty.clone()).or_default().push(name.clone());
                }
            }
        }
        let mut spread: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (name, file) in &self.files {
            let toks = &file.tokens;
            for i in 0..toks.len() {
                if ident(toks.get(i)) != Some("impl") || !prev_is_item_start(toks, i) {
                    continue;
                }
                let Some((ty, _)) = impl_type(toks, i) else {
                    continue;
                };
                let Some(homes) = defined.get(&ty) else {
                    continue;
                };
                if homes.contains(name) {
                    continue;
                }
                let shared = |home: &String| {
                    let m = &self.files[home].module;
                    m.iter()
                        .zip(&file.module)
                        .take_while(|(a, b)| a == b)
                        .count()
                };
                if let Some(home) = homes.iter().max_by_key(|h| shared(h)) {
                    spread
                        .entry(format!("{home}:{ty}"))
                        .or_default()
                        .insert(name.clone());
                }
            }
        }
        spread
    }

    /// Every function with a body, outside the test items, with its length in lines: a method
    /// (or a function within one) named `Type::name` after the innermost `impl` or `trait`.
    fn functions(&self) -> Vec<Function> {
        let mut out = Vec::new();
        for (file, f) in &self.files {
            for s in signatures(&f.tokens) {
                let Some(lines) = s.lines else { continue };
                out.push(Function {
                    file: file.clone(),
                    name: match &s.within {
                        Some(ty) => format!("{ty}::{}", s.name),
                        None => s.name,
                    },
                    line: s.line,
                    lines,
                });
            }
        }
        out
    }
}

impl Crate {
    /// The module graph's figures: files (each a module), arrows (file to file, one per ordered
    /// pair), cycles, circles, and for each top-level module of more than one file the arrows
    /// inside it, into it and out of it.
    fn graph_figures(&self) -> String {
        let edges = self.edges();
        let arrows: Vec<(&String, &String)> = edges
            .iter()
            .flat_map(|(from, tos)| tos.keys().map(move |to| (from, to)))
            .collect();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "module graph: {} files (modules), {} import arrows, {} cycles, {} circles",
            self.files.len(),
            arrows.len(),
            self.cycles().len(),
            self.sibling_circles().len()
        );
        // `check.rs` and `check/job.rs` are both of `check`; `lib.rs` is the crate's own.
        let top = |file: &str| {
            self.files[file]
                .module
                .first()
                .cloned()
                .unwrap_or_else(|| "lib".to_string())
        };
        let mut tops: BTreeMap<String, [usize; 4]> = BTreeMap::new();
        for name in self.files.keys() {
            tops.entry(top(name)).or_default()[0] += 1;
        }
        for (from, to) in &arrows {
            let (a, b) = (top(from), top(to));
            if a == b {
                tops.entry(a).or_default()[1] += 1;
            } else {
                tops.entry(b).or_default()[2] += 1;
                tops.entry(a).or_default()[3] += 1;
            }
        }
        let _ = writeln!(
            s,
            "top-level modules of more than one file (files, arrows inside, in, out):"
        );
        for (module, [files, inside, into, out]) in &tops {
            if *files > 1 {
                let _ = writeln!(s, "  {module:16} {files:3} {inside:4} {into:4} {out:4}");
            }
        }
        s
    }

    /// Every function whose first parameter (after `self`) is `&mut` of a struct defined in
    /// another file: the struct found through the file's own `use`s, or (not imported: a glob)
    /// the one of that name nearest in the module tree. Generic parameters, `dyn` and `impl`
    /// types and types from outside the crate are not structs of the crate.
    fn mut_borrows(&self) -> Vec<MutBorrow> {
        let mut structs: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, file) in &self.files {
            for pair in file.tokens.windows(2) {
                if let (Tok::Ident(kw), Tok::Ident(ty)) = (&pair[0].tok, &pair[1].tok)
                    && kw == "struct"
                {
                    structs.entry(ty.clone()).or_default().push(name.clone());
                }
            }
        }
        let mut out = Vec::new();
        for (name, file) in &self.files {
            for sig in signatures(&file.tokens) {
                let Some(ty) = sig.mut_first.last() else {
                    continue;
                };
                if sig.mut_first.len() == 1 && sig.generics.contains(ty) {
                    continue;
                }
                let Some(homes) = structs.get(ty) else {
                    continue;
                };
                let Some(home) = self.struct_home(name, &sig.mut_first, homes) else {
                    continue;
                };
                if home != *name {
                    out.push(MutBorrow {
                        file: name.clone(),
                        function: sig.name,
                        line: sig.line,
                        ty: ty.clone(),
                        home,
                        method_of: sig.method_of,
                    });
                }
            }
        }
        out
    }

    /// The file defining the struct a type path names in `file`, among `homes` (the files
    /// defining a struct of that name); `None` when the path leaves the crate.
    fn struct_home(&self, file: &str, path: &[String], homes: &[String]) -> Option<String> {
        let module = &self.files[file].module;
        if path.len() == 1 && homes.iter().any(|h| h == file) {
            return Some(file.to_string());
        }
        let full = if path.len() == 1 {
            imports(&self.files[file].tokens)
                .into_iter()
                .find(|(_, seen)| *seen == path[0])
                .map(|(p, _)| p)
        } else {
            Some(path.to_vec())
        };
        if let Some(full) = full {
            let abs = self.absolute(module, &full)?;
            let to = self.resolve(&abs, 0);
            if homes.contains(&to) {
                return Some(to);
            }
        }
        let shared = |home: &&String| {
            self.files[*home]
                .module
                .iter()
                .zip(module)
                .take_while(|(a, b)| a == b)
                .count()
        };
        homes.iter().max_by_key(shared).cloned()
    }
}

/// One `fn` with a body or not, outside the test items.
struct Signature {
    name: String,
    line: usize,
    /// The type whose `impl` or `trait` block the `fn` is directly in.
    method_of: Option<String>,
    /// The innermost `impl` or `trait` block around it, at any depth (a function within a
    /// method is named after the method's type).
    within: Option<String>,
    /// Its lines, `fn` to closing brace; `None` without a body.
    lines: Option<usize>,
    /// The names of its generic parameters (lifetimes aside: the lexer drops them).
    generics: BTreeSet<String>,
    /// The path of its first parameter's type (after `self`) when that is `&mut path`.
    mut_first: Vec<String>,
}

/// Every `fn` of a file, with what [`Signature`] says of it.
fn signatures(toks: &[Token]) -> Vec<Signature> {
    let mut out = Vec::new();
    // The `impl` and `trait` blocks open, with the brace depth of their items.
    let mut blocks: Vec<(usize, String)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i].tok {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                while blocks.last().is_some_and(|(d, _)| *d > depth) {
                    blocks.pop();
                }
            }
            Tok::Ident(kw) if kw == "impl" && prev_is_item_start(toks, i) => {
                if let Some((ty, open)) = impl_type(toks, i) {
                    depth += 1;
                    blocks.push((depth, ty));
                    i = open + 1;
                    continue;
                }
            }
            Tok::Ident(kw) if kw == "trait" => {
                if let (Some(name), Some(open)) = (
                    ident(toks.get(i + 1)),
                    toks[i..].iter().position(|t| t.tok == Tok::Punct('{')),
                ) {
                    depth += 1;
                    blocks.push((depth, name.to_string()));
                    i += open + 1;
                    continue;
                }
            }
            Tok::Ident(kw) if kw == "fn" => {
                if let Some(name) = ident(toks.get(i + 1)) {
                    let (generics, mut_first) = first_parameter(toks, i);
                    out.push(Signature {
                        name: name.to_string(),
                        line: toks[i].line,
                        method_of: blocks
                            .last()
                            .filter(|(d, _)| *d == depth)
                            .map(|(_, ty)| ty.clone()),
                        within: blocks.last().map(|(_, ty)| ty.clone()),
                        lines: body_start(toks, i)
                            .map(|open| toks[matching(toks, open)].line - toks[i].line + 1),
                        generics,
                        mut_first,
                    });
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The generic parameters of the `fn` at `i`, and the path of its first parameter's type
/// (after `self`) when that is `&mut path` (empty otherwise).
fn first_parameter(toks: &[Token], i: usize) -> (BTreeSet<String>, Vec<String>) {
    let mut generics = BTreeSet::new();
    let mut j = i + 2;
    if is_punct(toks.get(j), '<') {
        let mut depth = 0;
        while j < toks.len() {
            match toks[j].tok {
                Tok::Punct('<') => depth += 1,
                // `->` in a bound (`F: Fn() -> T`) closes nothing.
                Tok::Punct('>') if !is_punct(toks.get(j - 1), '-') => {
                    depth -= 1;
                    if depth == 0 {
                        j += 1;
                        break;
                    }
                }
                // A parameter's name: first after `<` or `,` (or `const`).
                Tok::Ident(ref name)
                    if depth == 1
                        && name != "const"
                        && (is_punct(toks.get(j - 1), '<')
                            || is_punct(toks.get(j - 1), ',')
                            || ident(toks.get(j - 1)) == Some("const")) =>
                {
                    generics.insert(name.clone());
                }
                _ => {}
            }
            j += 1;
        }
    }
    if !is_punct(toks.get(j), '(') {
        return (generics, Vec::new());
    }
    let close = matching(toks, j);
    // The parameters, split at the commas outside brackets.
    let mut params: Vec<&[Token]> = Vec::new();
    let (mut start, mut k, mut angle) = (j + 1, j + 1, 0i32);
    while k < close {
        match toks[k].tok {
            Tok::Punct('(' | '[' | '{') => {
                k = matching(toks, k) + 1;
                continue;
            }
            Tok::Punct('<') => angle += 1,
            Tok::Punct('>') if !is_punct(toks.get(k - 1), '-') => angle -= 1,
            Tok::Punct(',') if angle == 0 => {
                params.push(&toks[start..k]);
                start = k + 1;
            }
            _ => {}
        }
        k += 1;
    }
    if start < close {
        params.push(&toks[start..close]);
    }
    let is_self = |p: &[Token]| {
        p.iter()
            .take_while(|t| t.tok != Tok::Punct(':'))
            .any(|t| t.tok == Tok::Ident("self".into()))
    };
    let Some(first) = params.into_iter().find(|p| !is_self(p)) else {
        return (generics, Vec::new());
    };
    let Some(colon) = first.iter().position(|t| t.tok == Tok::Punct(':')) else {
        return (generics, Vec::new());
    };
    let ty = &first[colon + 1..];
    let mut path = Vec::new();
    if is_punct(ty.first(), '&') && ident(ty.get(1)) == Some("mut") {
        let mut k = 2;
        if ty.get(k).is_some_and(|t| t.tok == Tok::Path) {
            k += 1;
        }
        while let Some(seg) = ident(ty.get(k)) {
            if matches!(seg, "dyn" | "impl") {
                return (generics, Vec::new());
            }
            path.push(seg.to_string());
            if ty.get(k + 1).is_some_and(|t| t.tok == Tok::Path) {
                k += 2;
            } else {
                break;
            }
        }
    }
    (generics, path)
}

/// Every name a file's `use`s bring in, with the path it stands for.
fn imports(toks: &[Token]) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if ident(toks.get(i)) == Some("use") {
            i = use_tree(toks, i + 1, &[], &mut out);
        } else {
            i += 1;
        }
    }
    out
}

/// The strongly connected components of more than one node of a graph given by its arrows.
fn strongly_connected(arrows: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let names: Vec<&String> = arrows
        .iter()
        .flat_map(|(from, tos)| std::iter::once(from).chain(tos))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let index_of: BTreeMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let succ: Vec<Vec<usize>> = names
        .iter()
        .map(|n| {
            arrows
                .get(*n)
                .map(|to| to.iter().map(|t| index_of[t.as_str()]).collect())
                .unwrap_or_default()
        })
        .collect();
    let mut t = Tarjan {
        succ: &succ,
        index: vec![None; names.len()],
        low: vec![0; names.len()],
        on_stack: vec![false; names.len()],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..names.len() {
        if t.index[v].is_none() {
            t.visit(v);
        }
    }
    t.out
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let mut c: Vec<String> = c.into_iter().map(|i| names[i].clone()).collect();
            c.sort();
            c
        })
        .collect()
}

struct Tarjan<'a> {
    succ: &'a [Vec<usize>],
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    next: usize,
    out: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.next);
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for &w in &self.succ[v] {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            self.out.push(component);
        }
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `registry/mod.rs` → `[registry]`, `registry/auth.rs` → `[registry, auth]`, `lib.rs` → `[]`.
fn module_of(name: &str) -> Vec<String> {
    let stem = name.strip_suffix(".rs").unwrap();
    let mut parts: Vec<String> = stem.split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The tokens of Rust source, with comments and the contents of literals left out.
fn lex(text: &str) -> Vec<Token> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let ident_char = |ch: char| ch.is_alphanumeric() || ch == '_';
    // Skips to past the closing quote of a plain string starting at `i` (on the quote).
    let skip_string = |mut i: usize, line: &mut usize| {
        i += 1;
        while i < c.len() && c[i] != '"' {
            if c[i] == '\\' {
                i += 1;
            }
            if c.get(i) == Some(&'\n') {
                *line += 1;
            }
            i += 1;
        }
        i + 1
    };
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if ch == '"' {
            i = skip_string(i, &mut line);
        } else if ch == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if c.get(i + 1) == Some(&'\\') {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < c.len() && ident_char(c[i]) {
                    i += 1;
                }
            }
        } else if ident_char(ch) {
            let start = i;
            while i < c.len() && ident_char(c[i]) {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            // Raw and byte strings: r"..", r#".."#, br#".."#, b"..", c"..".
            let raw = matches!(word.as_str(), "r" | "br" | "cr");
            if raw && matches!(c.get(i), Some('"' | '#')) {
                let mut hashes = 0;
                while c.get(i) == Some(&'#') {
                    hashes += 1;
                    i += 1;
                }
                if c.get(i) == Some(&'"') {
                    i += 1;
                    loop {
                        if i >= c.len() {
                            break;
                        }
                        if c[i] == '"' && (0..hashes).all(|h| c.get(i + 1 + h) == Some(&'#')) {
                            i += 1 + hashes;
                            break;
                        }
                        if c[i] == '\n' {
                            line += 1;
                        }
                        i += 1;
                    }
                    continue;
                }
            } else if matches!(word.as_str(), "b" | "c") && c.get(i) == Some(&'"') {
                i = skip_string(i, &mut line);
                continue;
            }
            out.push(Token {
                tok: Tok::Ident(word),
                line,
            });
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push(Token {
                tok: Tok::Path,
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                tok: Tok::Punct(ch),
                line,
            });
            i += 1;
        }
    }
    out
}

fn is_punct(t: Option<&Token>, ch: char) -> bool {
    t.is_some_and(|t| t.tok == Tok::Punct(ch))
}

fn ident(t: Option<&Token>) -> Option<&str> {
    match t.map(|t| &t.tok) {
        Some(Tok::Ident(s)) => Some(s),
        _ => None,
    }
}

/// The index of the bracket closing the one at `open`.
fn matching(toks: &[Token], open: usize) -> usize {
    let mut depth = 0i32;
    for (i, t) in toks.iter().enumerate().skip(open) {
        match t.tok {
            Tok::Punct('{' | '(' | '[') => depth += 1,
            Tok::Punct('}' | ')' | ']') => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    toks.len() - 1
}

/// Takes the `#[cfg(test)]` items out: the tokens left, the lines the items spanned, and the
/// names of the file modules declared test-only (`#[cfg(test)] mod x;`).
fn strip_tests(toks: Vec<Token>) -> (Vec<Token>, usize, Vec<String>) {
    let mut out = Vec::new();
    let mut lines = 0;
    let mut mods = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let is_cfg_test = is_punct(toks.get(i), '#')
            && is_punct(toks.get(i + 1), '[')
            && ident(toks.get(i + 2)) == Some("cfg")
            && is_punct(toks.get(i + 3), '(')
            && ident(toks.get(i + 4)) == Some("test")
            && is_punct(toks.get(i + 5), ')')
            && is_punct(toks.get(i + 6), ']');
        if !is_cfg_test {
            out.push(toks[i].clone());
            i += 1;
            continue;
        }
        let first_line = toks[i].line;
        let mut j = i + 7;
        // Further attributes of the same item.
        while is_punct(toks.get(j), '#') && is_punct(toks.get(j + 1), '[') {
            j = matching(&toks, j + 1) + 1;
        }
        // `mod name;` is a test-only file.
        let mut k = j;
        if ident(toks.get(k)) == Some("pub") {
            k += 1;
            if is_punct(toks.get(k), '(') {
                k = matching(&toks, k) + 1;
            }
        }
        if ident(toks.get(k)) == Some("mod") && is_punct(toks.get(k + 2), ';') {
            if let Some(name) = ident(toks.get(k + 1)) {
                mods.push(name.to_string());
            }
        }
        // The item ends at a `;` outside brackets, or with its first braced block.
        while j < toks.len() {
            match toks[j].tok {
                Tok::Punct(';') => break,
                Tok::Punct('(' | '[') => j = matching(&toks, j) + 1,
                Tok::Punct('{') => {
                    j = matching(&toks, j);
                    break;
                }
                _ => j += 1,
            }
        }
        let last = j.min(toks.len() - 1);
        lines += toks[last].line - first_line + 1;
        i = last + 1;
    }
    (out, lines, mods)
}

/// One path of a file that may reach a module.
struct Reach {
    path: Vec<String>,
    /// For a `pub use`, the name it is seen by (`*` for a glob).
    reexport: Option<String>,
}

/// Every path of the file that may reach a module: use trees (expanded), and `a::b` paths in
/// code whose first segment is not itself after `::` (nor `$crate`).
fn paths(toks: &[Token]) -> Vec<Reach> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let prev_joins = i > 0 && (toks[i - 1].tok == Tok::Path || is_punct(toks.get(i - 1), '$'));
        match ident(toks.get(i)) {
            Some("use") => {
                let mut tree = Vec::new();
                i = use_tree(toks, i + 1, &[], &mut tree);
                let public = is_pub(toks, i);
                out.extend(tree.into_iter().map(|(path, name)| Reach {
                    path,
                    reexport: public.then_some(name),
                }));
                continue;
            }
            Some(first) if !prev_joins && toks.get(i + 1).is_some_and(|t| t.tok == Tok::Path) => {
                let mut path = vec![first.to_string()];
                let mut j = i + 1;
                while toks.get(j).is_some_and(|t| t.tok == Tok::Path) {
                    match ident(toks.get(j + 1)) {
                        Some(seg) => {
                            path.push(seg.to_string());
                            j += 2;
                        }
                        None => break,
                    }
                }
                out.push(Reach {
                    path,
                    reexport: None,
                });
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Whether the `use` whose tree ends before `end` is a `pub use` (`pub(crate)` and the like
/// included).
fn is_pub(toks: &[Token], end: usize) -> bool {
    let Some(at) = toks[..end.min(toks.len())]
        .iter()
        .rposition(|t| t.tok == Tok::Ident("use".into()))
    else {
        return false;
    };
    match at.checked_sub(1).map(|p| &toks[p].tok) {
        Some(Tok::Ident(w)) => w == "pub",
        Some(Tok::Punct(')')) => {
            (at.saturating_sub(6)..at).any(|p| ident(toks.get(p)) == Some("pub"))
        }
        _ => false,
    }
}

/// Expands the use tree starting at `i` under `prefix` into (path, name seen by); returns the
/// index after it.
fn use_tree(
    toks: &[Token],
    mut i: usize,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, String)>,
) -> usize {
    let mut path = prefix.to_vec();
    if toks.get(i).is_some_and(|t| t.tok == Tok::Path) {
        i += 1;
    }
    loop {
        match toks.get(i).map(|t| &t.tok) {
            Some(Tok::Punct('{')) => {
                i += 1;
                while !is_punct(toks.get(i), '}') && i < toks.len() {
                    i = use_tree(toks, i, &path, out);
                    if is_punct(toks.get(i), ',') {
                        i += 1;
                    }
                }
                return i + 1;
            }
            Some(Tok::Punct('*')) => {
                out.push((path, "*".to_string()));
                return i + 1;
            }
            Some(Tok::Ident(seg)) => {
                if seg != "self" || path.is_empty() {
                    path.push(seg.clone());
                }
                i += 1;
                if toks.get(i).is_some_and(|t| t.tok == Tok::Path) {
                    i += 1;
                    continue;
                }
                let mut name = path.last().cloned().unwrap_or_default();
                if ident(toks.get(i)) == Some("as") {
                    name = ident(toks.get(i + 1)).unwrap_or("_").to_string();
                    i += 2;
                }
                out.push((path, name));
                return i;
            }
            _ => return i,
        }
    }
}

/// Whether the `impl` at `i` starts an item (not `impl Trait` in a type).
fn prev_is_item_start(toks: &[Token], i: usize) -> bool {
    i == 0
        || matches!(toks[i - 1].tok, Tok::Punct('}' | ';' | ']' | '{'))
        || matches!(ident(toks.get(i - 1)), Some("unsafe" | "default"))
}

/// The type an `impl` block is for, and the index of its opening brace.
fn impl_type(toks: &[Token], i: usize) -> Option<(String, usize)> {
    let mut j = i + 1;
    if is_punct(toks.get(j), '<') {
        let mut depth = 0;
        while j < toks.len() {
            match toks[j].tok {
                Tok::Punct('<') => depth += 1,
                Tok::Punct('>') => {
                    depth -= 1;
                    if depth == 0 {
                        j += 1;
                        break;
                    }
                }
                _ => {}
            }
            j += 1;
        }
    }
    let mut ty = ident(toks.get(j))?.to_string();
    let mut after_for = false;
    while j < toks.len() && !is_punct(toks.get(j), '{') {
        if ident(toks.get(j)) == Some("for") {
            after_for = true;
        } else if after_for {
            if let Some(name) = ident(toks.get(j)) {
                ty = name.to_string();
                after_for = false;
            }
        }
        j += 1;
    }
    (j < toks.len()).then_some((ty, j))
}

/// The index of the opening brace of the body of the `fn` at `i`, if it has one.
fn body_start(toks: &[Token], i: usize) -> Option<usize> {
    let mut j = i + 2;
    while j < toks.len() {
        match toks[j].tok {
            Tok::Punct(';') => return None,
            Tok::Punct('(' | '[') => j = matching(toks, j) + 1,
            Tok::Punct('{') => return Some(j),
            _ => j += 1,
        }
    }
    None
}
