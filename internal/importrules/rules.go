// Package importrules checks the layering the folder tree promises: the
// domain core imports no adapter, adapters import no core, and the service
// binary links no test bed. Its test runs the check over the module.
package importrules

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Package is what the rules need to know about one package directory.
type Package struct {
	Path        string   // module-relative, e.g. "handlers/groupsync"
	Imports     []string // of its non-test files, full import paths
	TestImports []string // of its _test.go files
}

// Rule forbids packages under From (module-relative prefixes) to import
// packages under To. Tests says whether _test.go files are held to it too.
type Rule struct {
	Name  string
	From  []string
	To    []string
	Tests bool
}

// Rules are the project's layering.
var Rules = []Rule{
	{Name: "messages imports nothing of the project but messages",
		From: []string{"messages"}, To: []string{"handlers", "infra", "pipeline", "cmd", "internal", "examples", "bench"}, Tests: true},
	{Name: "the core (handlers) imports no adapter, wiring or test bed",
		From: []string{"handlers"}, To: []string{"infra", "pipeline", "cmd", "internal/testbed", "internal/demo", "examples", "bench"}, Tests: true},
	{Name: "adapters (infra) import no core and no wiring",
		From: []string{"infra"}, To: []string{"handlers", "pipeline", "cmd", "internal/demo", "examples", "bench"}, Tests: true},
	{Name: "leaf packages import nothing of the project",
		From: []string{"internal/javaregex", "internal/filelock", "infra/kafkaproto", "infra/kafkaerr"}, To: []string{"messages", "handlers", "infra", "pipeline", "cmd", "internal", "examples", "bench"}, Tests: true},
	{Name: "production code imports no test bed",
		From: []string{"messages", "handlers", "infra", "pipeline", "cmd/checkpointd", "internal/service", "examples"}, To: []string{"internal/testbed", "internal/demo"}},
}

// Binary forbids a command to link packages whose import path has one of
// the Forbidden prefixes, directly or through any package it imports.
type Binary struct {
	Main      string   // module-relative path of the command
	Forbidden []string // import path prefixes; module-relative for the project's own
}

// Binaries are the checks on what the service binary links.
var Binaries = []Binary{
	{Main: "cmd/checkpointd", Forbidden: []string{"internal/testbed", "internal/demo", "github.com/twmb/franz-go"}},
}

// Violation is one forbidden import.
type Violation struct {
	Rule, From, Import string
	Test               bool
}

func (v Violation) String() string {
	kind := ""
	if v.Test {
		kind = " (in a test)"
	}
	return fmt.Sprintf("%s imports %s%s: %s", v.From, v.Import, kind, v.Rule)
}

// Check returns every violation of rules and binaries in pkgs, whose import
// paths start with module.
func Check(module string, pkgs []Package, rules []Rule, binaries []Binary) []Violation {
	local := func(imp string) (string, bool) {
		if imp == module {
			return "", true
		}
		rel, ok := strings.CutPrefix(imp, module+"/")
		return rel, ok
	}
	var out []Violation
	for _, p := range pkgs {
		for _, r := range rules {
			if !under(p.Path, r.From) {
				continue
			}
			check := func(imports []string, test bool) {
				for _, imp := range imports {
					if rel, ok := local(imp); ok && rel != p.Path && under(rel, r.To) {
						out = append(out, Violation{Rule: r.Name, From: p.Path, Import: rel, Test: test})
					}
				}
			}
			check(p.Imports, false)
			if r.Tests {
				check(p.TestImports, true)
			}
		}
	}
	byPath := make(map[string]Package, len(pkgs))
	for _, p := range pkgs {
		byPath[p.Path] = p
	}
	for _, b := range binaries {
		seen := map[string]bool{}
		var walk func(pkg string)
		walk = func(pkg string) {
			if seen[pkg] {
				return
			}
			seen[pkg] = true
			for _, imp := range byPath[pkg].Imports {
				rel, ok := local(imp)
				name := imp
				if ok {
					name = rel
				}
				if under(name, b.Forbidden) {
					out = append(out, Violation{Rule: b.Main + " links no test bed, demo or embedded cluster", From: pkg, Import: name})
					continue
				}
				if ok {
					walk(rel)
				}
			}
		}
		walk(b.Main)
	}
	slices.SortFunc(out, func(a, b Violation) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(out)
}

// under reports whether p is one of prefixes or inside one of them.
func under(p string, prefixes []string) bool {
	for _, pre := range prefixes {
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return true
		}
	}
	return false
}

// Load reads the imports of every package directory under root, the
// module's root directory. It skips hidden directories, testdata, and nested
// modules (a directory with its own go.mod).
func Load(root string) ([]Package, error) {
	pkgs := map[string]*Package{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			if rel != "." && fileExists(filepath.Join(p, "go.mod")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return fmt.Errorf("parse imports of %s: %w", rel, err)
		}
		dir := path.Dir(rel)
		pkg := pkgs[dir]
		if pkg == nil {
			pkg = &Package{Path: dir}
			pkgs[dir] = pkg
		}
		for _, spec := range f.Imports {
			imp := strings.Trim(spec.Path.Value, "\"`")
			if strings.HasSuffix(rel, "_test.go") {
				pkg.TestImports = append(pkg.TestImports, imp)
			} else {
				pkg.Imports = append(pkg.Imports, imp)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the module's imports: %w", err)
	}
	out := make([]Package, 0, len(pkgs))
	for _, p := range pkgs {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b Package) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
