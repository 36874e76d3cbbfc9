package explain

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// kubeModules returns the source directories of the pinned k8s.io/kubernetes
// and k8s.io/api (hack/kube/go.mod) in the module cache; it skips (-short)
// or fails, saying how to get them, when they are not there.
func kubeModules(t *testing.T) (kubernetes, api string) {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-json", "k8s.io/kubernetes", "k8s.io/api")
	cmd.Dir = filepath.Join("..", "hack", "kube")
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.Output()
	dirs := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for err == nil {
		var m struct{ Path, Version, Dir string }
		if err = dec.Decode(&m); err == nil {
			dirs[m.Path] = m.Dir
		}
	}
	kubernetes, api = dirs["k8s.io/kubernetes"], dirs["k8s.io/api"]
	if kubernetes == "" || api == "" {
		msg := fmt.Sprintf("the source of the pinned k8s.io/kubernetes and k8s.io/api (hack/kube/go.mod) is not in the module cache (go list -m in hack/kube: %v, %q): `make cluster-binaries` downloads it, or `cd hack/kube && go mod download k8s.io/kubernetes k8s.io/api`", err, out)
		if testing.Short() {
			t.Skip(msg)
		}
		t.Fatal(msg)
	}
	return kubernetes, api
}

// kubeReasons are the reasons the pinned Kubernetes can write, read from
// its source: by where they appear, the set of reasons and, for each, the
// files that write it.
type kubeReasons map[Where]map[string][]string

func (k kubeReasons) add(w Where, reason, file string) {
	if reason == "" {
		return
	}
	if k[w] == nil {
		k[w] = map[string][]string{}
	}
	if !slices.Contains(k[w][reason], file) {
		k[w][reason] = append(k[w][reason], file)
	}
}

// goFiles parses the non-test Go files of dir (and below, if deep), not
// those of testing or fake packages.
func goFiles(t *testing.T, dir string, deep bool) map[string]*ast.File {
	t.Helper()
	out := map[string]*ast.File{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			base := d.Name()
			if path != dir && (!deep || base == "testing" || base == "testdata" || strings.HasPrefix(base, "fake")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasPrefix(d.Name(), "fake") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		out[path] = f
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// stringConsts returns the string constants of files, by name (the last
// one wins where two packages share a name: the callers look names up in
// the package they read first).
func stringConsts(files map[string]*ast.File) map[string]string {
	out := map[string]string{}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if v, ok := stringLit(vs.Values[i]); ok {
							out[name.Name] = v
						}
					}
				}
			}
		}
	}
	return out
}

func stringLit(e ast.Expr) (string, bool) {
	if l, ok := e.(*ast.BasicLit); ok && l.Kind == token.STRING {
		v, err := strconv.Unquote(l.Value)
		return v, err == nil
	}
	return "", false
}

// errorsNew returns the messages of errors.New("X") in var declarations:
// the kubelet's waiting reasons are errors whose message is the reason.
func errorsNew(files map[string]*ast.File) map[string]string {
	out := map[string]string{}
	for path, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok || len(c.Args) != 1 {
				return true
			}
			if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "New" {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "errors" {
					if v, ok := stringLit(c.Args[0]); ok && regexp.MustCompile(`^[A-Z][A-Za-z]+$`).MatchString(v) {
						out[v] = path
					}
				}
			}
			return true
		})
	}
	return out
}

// eventReasons returns the reasons of the events that the calls of files
// record: a recorder method (Event, Eventf, AnnotatedEventf, WarningEvent...)
// whose first argument names a pod (any object, if all), with an event type
// argument (v1.EventTypeWarning, "Normal") followed by the reason, a
// string literal or a constant of consts. A reason held in a variable is
// not known to the source and is reported as such.
func eventReasons(t *testing.T, files map[string]*ast.File, consts map[string]string, k kubeReasons, root string, all bool) (unresolved []string) {
	podish := regexp.MustCompile(`(?i)pod`)
	for path, f := range files {
		rel, _ := filepath.Rel(root, path)
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok || len(c.Args) < 3 {
				return true
			}
			sel, ok := c.Fun.(*ast.SelectorExpr)
			if !ok || !strings.Contains(sel.Sel.Name, "Event") {
				return true
			}
			if !all && !podish.MatchString(exprText(c.Args[0])) {
				return true
			}
			for i := 0; i+1 < len(c.Args); i++ {
				if !isEventType(c.Args[i]) {
					continue
				}
				r := c.Args[i+1]
				switch e := r.(type) {
				case *ast.BasicLit:
					if v, ok := stringLit(e); ok {
						k.add(WhereEvent, v, rel)
					}
				case *ast.Ident:
					if v, ok := consts[e.Name]; ok {
						k.add(WhereEvent, v, rel)
					} else {
						unresolved = append(unresolved, rel+": "+e.Name)
					}
				case *ast.SelectorExpr:
					if v, ok := consts[e.Sel.Name]; ok {
						k.add(WhereEvent, v, rel)
					} else {
						unresolved = append(unresolved, rel+": "+exprText(e))
					}
				default:
					unresolved = append(unresolved, rel+": "+exprText(r))
				}
				break
			}
			return true
		})
	}
	return unresolved
}

func isEventType(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.SelectorExpr:
		return x.Sel.Name == "EventTypeWarning" || x.Sel.Name == "EventTypeNormal"
	case *ast.BasicLit:
		v, _ := stringLit(x)
		return v == "Warning" || v == "Normal"
	}
	return false
}

func exprText(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprText(x.X) + "." + x.Sel.Name
	case *ast.CallExpr:
		return exprText(x.Fun) + "()"
	case *ast.StarExpr:
		return "*" + exprText(x.X)
	case *ast.UnaryExpr:
		return exprText(x.X)
	case *ast.IndexExpr:
		return exprText(x.X) + "[]"
	case *ast.BasicLit:
		return x.Value
	}
	return fmt.Sprintf("%T", e)
}

// readKubeReasons reads the reasons the pinned Kubernetes writes on pods:
// the kubelet's event reasons (pkg/kubelet/events) and the reasons of the
// events the kubelet, the scheduler, the controllers and the volume code
// record on pods; the kubelet's container waiting reasons (its errors,
// pkg/kubelet/images, container, kuberuntime; ContainerCreating and
// PodInitializing) and terminated reasons; the pod condition reasons
// (k8s.io/api's PodReason*, pkg/kubelet/status) and the reasons of a
// pod's status (eviction, node shutdown, active deadline, the kubelet's
// admission).
func readKubeReasons(t *testing.T, kube, api string) (kubeReasons, []string) {
	k := kubeReasons{}
	p := func(rel string) string { return filepath.Join(kube, filepath.FromSlash(rel)) }
	file := func(rel string) map[string]*ast.File {
		all := goFiles(t, filepath.Dir(p(rel)), false)
		return map[string]*ast.File{p(rel): all[p(rel)]}
	}
	rel := func(path string) string { r, _ := filepath.Rel(kube, path); return r }
	// The kubelet's event reasons, every one of them.
	kubeletEvents := stringConsts(file("pkg/kubelet/events/event.go"))
	for _, v := range kubeletEvents {
		k.add(WhereEvent, v, "pkg/kubelet/events/event.go")
	}
	// The events recorded on pods: every event of the kubelet, the
	// scheduler and the volume code (most are about pods; those about
	// nodes are in the vocabulary as such), and the controllers' events
	// whose object names a pod, all of those of the controllers that act
	// on pods (taint eviction, node lifecycle, pod GC, volumes,
	// disruption budgets, resource claims).
	extra := stringConsts(goFiles(t, filepath.Join(api, "certificates", "v1beta1"), false))
	var unresolved []string
	for _, src := range []struct {
		dir string
		all bool
	}{
		{"pkg/kubelet", true}, {"pkg/scheduler", true}, {"pkg/volume", true}, {"pkg/registry/core/pod", true},
		{"pkg/controller/tainteviction", true}, {"pkg/controller/devicetainteviction", true}, {"pkg/controller/util/node", true},
		{"pkg/controller/podgc", true}, {"pkg/controller/volume", true}, {"pkg/controller/disruption", true}, {"pkg/controller/resourceclaim", true},
		{"pkg/controller", false},
	} {
		files := goFiles(t, p(src.dir), true)
		consts := stringConsts(files)
		for name, v := range extra {
			if _, ok := consts[name]; !ok {
				consts[name] = v
			}
		}
		for name, v := range kubeletEvents {
			consts[name] = v
		}
		unresolved = append(unresolved, eventReasons(t, files, consts, k, kube, src.all)...)
	}
	// Container waiting reasons: the kubelet's errors, and its start-up
	// reasons.
	for _, f := range []string{"pkg/kubelet/images/types.go", "pkg/kubelet/container/sync_result.go", "pkg/kubelet/kuberuntime/kuberuntime_container.go"} {
		for v := range errorsNew(file(f)) {
			k.add(WhereWaiting, v, f)
		}
	}
	pods := stringConsts(file("pkg/kubelet/kubelet_pods.go"))
	for _, name := range []string{"PodInitializing", "ContainerCreating", "RestartingAllContainers"} {
		k.add(WhereWaiting, pods[name], "pkg/kubelet/kubelet_pods.go")
	}
	// Container terminated reasons the kubelet writes itself (the runtime
	// writes Completed, Error, OOMKilled, ContainerCannotRun, StartError).
	k.add(WhereTerminated, stringConsts(file("pkg/kubelet/container/runtime.go"))["ContainerReasonStatusUnknown"], "pkg/kubelet/container/runtime.go")
	// Pod condition reasons.
	for name, v := range stringConsts(goFiles(t, filepath.Join(api, "core", "v1"), false)) {
		if strings.HasPrefix(name, "PodReason") {
			k.add(WhereCondition, v, "k8s.io/api/core/v1/types.go")
		}
	}
	for _, v := range stringConsts(file("pkg/kubelet/status/generate.go")) {
		k.add(WhereCondition, v, "pkg/kubelet/status/generate.go")
	}
	// The reasons of a pod's status: eviction, node shutdown, the active
	// deadline, the kubelet's admission (a pod it rejects fails with them).
	for _, f := range []string{"pkg/kubelet/eviction/helpers.go", "pkg/kubelet/nodeshutdown/nodeshutdown_manager.go", "pkg/kubelet/active_deadline.go"} {
		for name, v := range stringConsts(file(f)) {
			if strings.HasSuffix(name, "eason") {
				k.add(WherePodStatus, v, f)
			}
		}
	}
	for _, f := range []string{"pkg/kubelet/lifecycle/predicate.go", "pkg/kubelet/lifecycle/handlers.go", "pkg/kubelet/cm/admission/errors.go"} {
		for _, v := range stringConsts(file(f)) {
			if regexp.MustCompile(`^[A-Z][A-Za-z]+$`).MatchString(v) {
				k.add(WherePodStatus, v, f)
			}
		}
	}
	_ = rel
	sort.Strings(unresolved)
	return k, slices.Compact(unresolved)
}

// TestVocabularyComplete: every reason the pinned Kubernetes can write on a
// pod, read from its source, is in Vocabulary, mapped to the finding that
// reads it or marked benign with why; an upgrade that brings a new one
// fails here, naming it.
func TestVocabularyComplete(t *testing.T) {
	kube, api := kubeModules(t)
	found, unresolved := readKubeReasons(t, kube, api)
	if os.Getenv("PODTRACE_VOCABULARY_DUMP") != "" {
		for _, w := range []Where{WhereEvent, WhereWaiting, WhereTerminated, WhereCondition, WherePodStatus} {
			for _, r := range sortedKeys(found[w]) {
				fmt.Printf("%s\t%s\t%s\n", w, r, strings.Join(found[w][r], ","))
			}
		}
		for _, u := range unresolved {
			fmt.Printf("unresolved\t%s\n", u)
		}
	}
	total := 0
	for w, reasons := range found {
		for _, r := range sortedKeys(reasons) {
			total++
			if _, ok := VocabularyOf(w, r); !ok {
				t.Errorf("%s reason %q (%s) is not in explain.Vocabulary: map it to the finding that reads it, or mark it benign with why", w, r, strings.Join(reasons[r], ", "))
			}
		}
	}
	if total < 100 {
		t.Errorf("read only %d reasons from the source of k8s.io/kubernetes: the reader no longer finds them", total)
	}
	t.Logf("%d reasons read from %s and %s; %d event reasons held in variables, not known to the source", total, filepath.Base(kube), filepath.Base(api), len(unresolved))
}

// TestVocabularyWellFormed: each entry is read by rules that exist, or
// benign with why, never both; event-warning's say what they mean and what
// to check; none twice.
func TestVocabularyWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range Vocabulary {
		key := string(v.Where) + "/" + v.Reason
		if seen[key] {
			t.Errorf("%s twice", key)
		}
		seen[key] = true
		if (len(v.Findings) == 0) == (v.Benign == "") {
			t.Errorf("%s: want findings or a benign why, one of them: %+v", key, v)
		}
		for _, id := range v.Findings {
			if !ruleGives(id) {
				t.Errorf("%s: finding %q is given by no rule", key, id)
			}
		}
		if slices.Contains(v.Findings, "event-warning") && (v.Means == "" || v.Check == "") {
			t.Errorf("%s: event-warning needs what it means and what to check", key)
		}
	}
}
