#!/usr/bin/env python3
"""Checks that docs/ARCHITECTURE.md names only what exists, and stays short.

Every inline code span (`...`, outside fenced blocks) is looked at:

- a path (`Sources/...`, `Tests/...`, `scripts/...`, `docs/...`; globs allowed) must exist;
- a file name (`Recorder+Process.swift`, `Package.swift`, `*+Process.swift`) must exist somewhere in the repository;
- a Swift type (UpperCamelCase: `Session`, `EngineClient<State>`) must be declared in Sources
  (`grep -rE "(struct|class|enum|protocol|actor|typealias) NAME\\b" Sources`), or be a module (a folder of Sources),
  a test target (a folder of Tests) or a test suite declared in Tests. Standard-library and system names
  (Sendable, BitwiseCopyable) are not in Sources: write them without backticks;
- `Type.member` (`Session.execute`, `Command.parse(address:values:)`, `CommandReply.Refusal`) also needs the member:
  a `func`/`var`/`let`/`case` of that name (or a nested type) in a file that declares or extends the type.

Anything else (commands, keys, lower-case words, URLs, `/api/...`) is left alone. Relative Markdown links to files
that do not exist are reported as warnings, not failures (a page may be on its way).

The allowed imports: every `import` line of a module's sources (`Sources/NAME`) must name a module its row of the
Modules table lists under "imports" (besides Foundation, Glibc, Darwin, Dispatch and Synchronization; "Hummingbird (core,
WebSocket)" allows Hummingbird, HummingbirdCore and HummingbirdWebSocket). An import the table does not allow fails.

Prints what is missing and exits 1 if anything is, or if the document is over the word limit (words as `wc -w`
counts them). Usage: scripts/check-architecture.py [--doc docs/ARCHITECTURE.md] [--limit 3500] [-v]
"""
import argparse
import fnmatch
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATH_ROOTS = ("Sources/", "Tests/", "scripts/", "docs/")
FILE_NAME = re.compile(r"^[\w+*.-]+\.(swift|md|json|py|c|h|sh|txt|toml|js|css|html)$")
TYPE_SPAN = re.compile(r"^([A-Z][A-Za-z0-9_]*)(?:<[^>]*>)?(?:\.([A-Za-z_][A-Za-z0-9_]*))?(?:\(.*\))?$")
SKIP_DIRS = {".build", ".git", ".swiftpm", "node_modules", "__pycache__"}


def code_spans(text):
    """(line number, span) for every inline code span outside fenced code blocks."""
    out = []
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for m in re.finditer(r"(`+)(.+?)\1", line):
            out.append((number, m.group(2).strip()))
    return out


def swift_files(folder):
    return [p for p in (ROOT / folder).rglob("*.swift") if not SKIP_DIRS & set(p.parts)]


def repo_files():
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        for f in filenames:
            yield f


class Index:
    def __init__(self):
        self.sources = {p: p.read_text(errors="replace") for p in swift_files("Sources")}
        self.tests = {p: p.read_text(errors="replace") for p in swift_files("Tests")}
        self.modules = {p.name for p in (ROOT / "Sources").iterdir() if p.is_dir()}
        self.test_targets = {p.name for p in (ROOT / "Tests").iterdir() if p.is_dir()}
        self.names = set(repo_files())

    @staticmethod
    def declares(text, name):
        return re.search(r"\b(struct|class|enum|protocol|actor|typealias)\s+" + re.escape(name) + r"\b", text)

    def type_exists(self, name):
        """Where `name` is: 'type', 'module', 'test target', 'test suite', or None."""
        if any(self.declares(t, name) for t in self.sources.values()):
            return "type"
        if name in self.modules:
            return "module"
        if name in self.test_targets:
            return "test target"
        if any(self.declares(t, name) for t in self.tests.values()):
            return "test suite"
        return None

    def member_exists(self, type_name, member):
        """A member declared in a Sources file that declares or extends `type_name`."""
        owner = re.compile(r"\b(struct|class|enum|protocol|actor|extension)\s+" + re.escape(type_name) + r"\b")
        if member[0].isupper():
            decl = re.compile(r"\b(struct|class|enum|protocol|actor|typealias)\s+" + re.escape(member) + r"\b")
        else:
            decl = re.compile(r"\b(func|var|let)\s+" + re.escape(member) + r"\b|\bcase\b[^\n]*\b" + re.escape(member) + r"\b"
                              + (r"|\binit\s*[(<?]" if member == "init" else ""))
        return any(owner.search(t) and decl.search(t) for t in self.sources.values())


SYSTEM_MODULES = {"Foundation", "Glibc", "Darwin", "Dispatch", "Synchronization"}


def allowed_imports(text):
    """Module name -> the modules its row of the Modules table allows it to import."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^\|\s*`(\w+)`(?:\s*\(C\))?\s*\|([^|]*)\|", line)
        if not m:
            continue
        allowed = set()
        for part in re.findall(r"(\w+)(?:\s*\(([^)]*)\))?", m.group(2)):
            name, subs = part
            if name == "nothing":
                continue
            allowed.add(name)
            for sub in filter(None, (x.strip() for x in subs.split(","))):
                allowed.add(name + sub[0].upper() + sub[1:])
        out[m.group(1)] = allowed
    return out


def import_problems(text):
    """(module, file, imported) for each import line its module's row does not allow."""
    rows = allowed_imports(text)
    problems = []
    for module, allowed in rows.items():
        folder = ROOT / "Sources" / module
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.swift")):
            for m in re.finditer(r"^\s*(?:@\w+\s+)*import\s+(?:(?:struct|class|enum|func)\s+)?(\w+)", path.read_text(),
                                 re.M):
                name = m.group(1)
                if name not in allowed and name not in SYSTEM_MODULES:
                    problems.append((module, path.relative_to(ROOT), name))
    return problems, len(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--doc", default="docs/ARCHITECTURE.md")
    ap.add_argument("--limit", type=int, default=3500)
    ap.add_argument("-v", "--verbose", action="store_true", help="list every name checked")
    args = ap.parse_args()
    doc = (ROOT / args.doc).resolve()
    text = doc.read_text()
    index = Index()

    missing, checked, seen = [], 0, set()
    for line, span in code_spans(text):
        if span in seen:
            continue
        seen.add(span)
        what, ok = None, True
        if span.startswith(PATH_ROOTS):
            what = "path"
            ok = any(True for _ in ROOT.glob(span.rstrip("/"))) if any(c in span for c in "*?[") \
                else (ROOT / span).exists()
        elif FILE_NAME.match(span):
            what = "file"
            ok = any(fnmatch.fnmatchcase(n, span) for n in index.names)
        else:
            m = TYPE_SPAN.match(span)
            if m and re.search(r"[a-z]", m.group(1)):
                name, member = m.group(1), m.group(2)
                kind = index.type_exists(name)
                what = kind or "type"
                ok = kind is not None
                if ok and member:
                    what = f"{kind} member"
                    ok = kind == "type" and index.member_exists(name, member)
        if what is None:
            continue
        checked += 1
        if args.verbose:
            print(f"  {'ok     ' if ok else 'MISSING'} {what:18} {span}")
        if not ok:
            missing.append((line, what, span))

    warnings = []
    for m in re.finditer(r"\]\(([^)#\s]+)(#[^)]*)?\)", text):
        target = m.group(1)
        if re.match(r"^[a-z]+:", target):
            continue
        if not (doc.parent / target).exists():
            warnings.append(target)

    imports, modules = import_problems(text)
    words = len(text.split())
    rel = doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc
    print(f"{rel}: {checked} names checked (types, members, modules, paths, files), {len(missing)} missing")
    for line, what, span in missing:
        print(f"  missing {what}: {span} ({rel}:{line})")
    for target in sorted(set(warnings)):
        print(f"  warning: link to {target}, which does not exist (yet)")
    print(f"{rel}: the imports of {modules} modules checked against its Modules table, {len(imports)} not allowed")
    for module, path, name in imports:
        print(f"  not allowed: {path} imports {name} ({module} may import only what its row lists)")
    over = words > args.limit
    print(f"{rel}: {words} words (limit {args.limit}){': too long' if over else ''}")
    return 1 if missing or over or imports else 0


if __name__ == "__main__":
    sys.exit(main())
