package diff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// scriptString spells an edit script as go-cmp's EditScript.String does:
// '.' kept, 'X' removed, 'Y' added, 'M' modified.
func scriptString(es []editOp) string {
	var b strings.Builder
	for _, op := range es {
		b.WriteByte(".XYM"[op])
	}
	return b.String()
}

func TestOrderedScript(t *testing.T) {
	l := func(s string) []string { return strings.Fields(s) }
	tests := []struct {
		name   string
		x, y   []string
		script string
	}{
		{"equal", l("a b c"), l("a b c"), "..."},
		{"insert in the middle", l("a b c"), l("a x b c"), ".Y.."},
		{"delete in the middle", l("a b c"), l("a c"), ".X."},
		{"replace", l("a b c"), l("a z c"), ".M."},
		{"append", l("a b"), l("a b c"), "..Y"},
		{"prepend", l("a b"), l("z a b"), "Y.."},
		{"cut", l("a b c"), l("a"), ".XX"},
		{"empty to non-empty", l(""), l("a b"), "YY"},
		{"non-empty to empty", l("a b"), l(""), "XX"},
		{"swap: the old one removed, added again", l("a b"), l("b a"), "X.Y"},
		{"move to the front", l("a b c"), l("c a b"), "Y..X"},
		{"move to the back", l("a b c"), l("b c a"), "X..Y"},
		{"reverse", l("a b c"), l("c b a"), "M.M"},
		{"duplicate removed", l("a a b"), l("a b"), ".X."},
		{"duplicate added", l("a b"), l("a b b"), "..Y"},
		{"duplicates around", l("a b a"), l("a"), ".XX"},
		{"all different", l("a b"), l("c d e"), "MMY"},
		{"insert before, modify after", l("--a --b"), l("--b --a --c"), "Y.M"},
		{"fewer edits than go-cmp's greedy search", l("--b --a --c"), l("--a --b"), "X.M"},
		{"substitutions do not beat keeping", l("a b"), l("b c"), "X.Y"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := scriptString(orderedScript(reflect.ValueOf(tc.x), reflect.ValueOf(tc.y)))
			if got != tc.script {
				t.Errorf("script %q -> %q = %s, want %s", tc.x, tc.y, got, tc.script)
			}
		})
	}
}

// TestOrderedScriptLongMiddle checks step 4: a middle too long to search
// is compared position by position.
func TestOrderedScriptLongMiddle(t *testing.T) {
	n := 300 // 298*298 pairs in the middle, more than maxScriptCells
	x, y := make([]string, n), make([]string, n+1)
	for i := range n {
		x[i] = fmt.Sprint(i)
		y[i] = x[i]
	}
	x[0], x[n-1] = "first", "last"
	y[n] = "added"
	got := scriptString(orderedScript(reflect.ValueOf(x), reflect.ValueOf(y)))
	// Two elements changed (first and last), one added: only the first is
	// found modified at its place; the rest is paired by position.
	want := "M" + strings.Repeat(".", n-2) + "MY"
	if got != want {
		t.Errorf("script = %s, want %s", got, want)
	}
}

// bestScript is the cost of the best script from x to y, without the
// shortcuts of orderedScript: the fewest edits, then the most elements kept
// (strings are all similar).
func bestScript(x, y []string) (edits, kept int) {
	type cost struct{ edits, kept int }
	better := func(a, b cost) bool { return a.edits < b.edits || a.edits == b.edits && a.kept > b.kept }
	memo := map[[2]int]cost{}
	var best func(i, j int) cost
	best = func(i, j int) cost {
		if i == len(x) || j == len(y) {
			return cost{len(x) - i + len(y) - j, 0}
		}
		if c, ok := memo[[2]int{i, j}]; ok {
			return c
		}
		r, a := best(i+1, j), best(i, j+1)
		c := cost{r.edits + 1, r.kept}
		if better(cost{a.edits + 1, a.kept}, c) {
			c = cost{a.edits + 1, a.kept}
		}
		d := best(i+1, j+1)
		if x[i] == y[j] {
			d.kept++
		} else {
			d.edits++
		}
		if better(d, c) {
			c = d
		}
		memo[[2]int{i, j}] = c
		return c
	}
	c := best(0, 0)
	return c.edits, c.kept
}

// TestOrderedScriptOptimal checks on random lists with many duplicates that
// the script turns x into y and is one of the best.
func TestOrderedScriptOptimal(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	list := func() []string {
		out := make([]string, r.IntN(8))
		for i := range out {
			out[i] = string(rune('a' + r.IntN(3)))
		}
		return out
	}
	for range 3000 {
		x, y := list(), list()
		es := orderedScript(reflect.ValueOf(x), reflect.ValueOf(y))
		ix, iy, edits, kept := 0, 0, 0, 0
		for _, op := range es {
			switch op {
			case opSame:
				if x[ix] != y[iy] {
					t.Fatalf("%q -> %q: script %s keeps %q as %q", x, y, scriptString(es), x[ix], y[iy])
				}
				ix, iy, kept = ix+1, iy+1, kept+1
			case opModify:
				if x[ix] == y[iy] {
					t.Fatalf("%q -> %q: script %s modifies %q into itself", x, y, scriptString(es), x[ix])
				}
				ix, iy, edits = ix+1, iy+1, edits+1
			case opRemove:
				ix, edits = ix+1, edits+1
			case opAdd:
				iy, edits = iy+1, edits+1
			}
		}
		if ix != len(x) || iy != len(y) {
			t.Fatalf("%q -> %q: script %s does not cover both lists", x, y, scriptString(es))
		}
		if we, wk := bestScript(x, y); edits != we || kept != wk {
			t.Fatalf("%q -> %q: script %s has %d edits and keeps %d, the best %d and %d", x, y, scriptString(es), edits, kept, we, wk)
		}
	}
}

// changeLines spells changes one a line, managedFields path included.
func changeLines(changes []Change) []string {
	var out []string
	for _, c := range changes {
		out = append(out, fmt.Sprintf("%s %s %q %q [%s]", c.Path, c.Op, c.Old, c.New, fieldsString(c.fields)))
	}
	return out
}

func TestComparePodsOrderedLists(t *testing.T) {
	args := func(old, new []string) [2]*corev1.Pod {
		a, b := basePod(), basePod()
		a.Spec.Containers[0].Args, b.Spec.Containers[0].Args = old, new
		return [2]*corev1.Pod{a, b}
	}
	const argsPath = "spec.containers[build].args"
	const argsFields = `f:spec f:containers k:{"name":"build"} f:args`
	arg := func(i int, op Op, old, new string) string {
		return fmt.Sprintf("%s[%d] %s %q %q [%s i:%d]", argsPath, i, op, old, new, argsFields, i)
	}
	l := func(s string) []string { return strings.Fields(s) }

	type req = corev1.NodeSelectorRequirement
	zone := req{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: l("a b")}
	disk := req{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: l("ssd")}
	arch := req{Key: "arch", Operator: corev1.NodeSelectorOpNotIn, Values: l("arm")}
	exprs := func(old, new []req) [2]*corev1.Pod {
		var pods [2]*corev1.Pod
		for i, e := range [][]req{old, new} {
			p := basePod()
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: e}},
			}}}
			pods[i] = p
		}
		return pods
	}
	const exprPath = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions"
	const exprFields = "f:spec f:affinity f:nodeAffinity f:requiredDuringSchedulingIgnoredDuringExecution f:nodeSelectorTerms i:0 f:matchExpressions"
	expr := func(i int, rest string, op Op, old, new string, restFields string) string {
		return fmt.Sprintf("%s[%d]%s %s %q %q [%s i:%d%s]", exprPath, i, rest, op, old, new, exprFields, i, restFields)
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }

	tests := []struct {
		name string
		pods [2]*corev1.Pod
		want []string
	}{
		{"insert in the middle", args(l("a b c"), l("a x b c")), []string{arg(1, OpAdd, "", "x")}},
		{"delete", args(l("a b c"), l("a c")), []string{arg(1, OpRemove, "b", "")}},
		{"replace", args(l("a b c"), l("a z c")), []string{arg(1, OpChange, "b", "z")}},
		{"move to the front", args(l("a b c"), l("c a b")), []string{arg(0, OpAdd, "", "c"), arg(2, OpRemove, "c", "")}},
		{"swap", args(l("a b"), l("b a")), []string{arg(0, OpRemove, "a", ""), arg(1, OpAdd, "", "a")}},
		{"reverse", args(l("a b c"), l("c b a")), []string{arg(0, OpChange, "a", "c"), arg(2, OpChange, "c", "a")}},
		{"duplicate removed", args(l("a a b"), l("a b")), []string{arg(1, OpRemove, "a", "")}},
		{"duplicate added", args(l("a b"), l("a b b")), []string{arg(2, OpAdd, "", "b")}},
		{"empty to non-empty", args([]string{}, l("a b")), []string{arg(0, OpAdd, "", "a"), arg(1, OpAdd, "", "b")}},
		{"nil to non-empty: added whole", args(nil, l("a b")), []string{fmt.Sprintf("%s add \"\" %q [%s]", argsPath, `["a","b"]`, argsFields)}},
		{"non-empty to nil: removed whole", args(l("a b"), nil), []string{fmt.Sprintf("%s remove %q \"\" [%s]", argsPath, `["a","b"]`, argsFields)}},
		{"nil to empty: no change", args(nil, []string{}), nil},
		{"insert before, modify after", args(l("--a --b"), l("--b --a --c")), []string{arg(0, OpAdd, "", "--b"), arg(2, OpChange, "--b", "--c")}},
		{"remove before, modify after", args(l("--b --a --c"), l("--a --b")), []string{arg(0, OpRemove, "--b", ""), arg(1, OpChange, "--c", "--b")}},
		{
			"nested list in a modified element", exprs([]req{zone, disk}, []req{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: l("b c")}, disk}),
			[]string{expr(0, ".values[0]", OpRemove, "a", "", " f:values i:0"), expr(0, ".values[1]", OpAdd, "", "c", " f:values i:1")},
		},
		{
			"field of a modified element", exprs([]req{zone, disk}, []req{zone, {Key: "disk", Operator: corev1.NodeSelectorOpNotIn, Values: l("ssd")}}),
			[]string{expr(1, ".operator", OpChange, "In", "NotIn", " f:operator")},
		},
		{"element inserted at the front", exprs([]req{zone, disk}, []req{arch, zone, disk}), []string{expr(0, "", OpAdd, "", js(arch), "")}},
		{"element deleted at the front", exprs([]req{zone, disk}, []req{disk}), []string{expr(0, "", OpRemove, js(zone), "", "")}},
		{
			"element replaced by one not similar: removed and added", exprs([]req{zone, disk}, []req{arch, disk}),
			[]string{expr(0, "", OpRemove, js(zone), "", ""), expr(0, "", OpAdd, "", js(arch), "")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := changeLines(ComparePods(tc.pods[0], tc.pods[1]))
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("changes (-want +got):\n%s", d)
			}
		})
	}
}

// orderedPairs are ordered list changes on which go-cmp's edit script
// depends on the direction it happens to search in.
func orderedPairs() [][2]*corev1.Pod {
	var pairs [][2]*corev1.Pod
	for _, c := range [][2]string{
		{"--a --b", "--b --a --c"},
		{"--b --a --c", "--a --b"},
		{"a b", "b a"},
		{"a b c", "c b a"},
		{"a b c d", "b a d c"},
		{"a b c", "c a b"},
		{"x a b c y", "y a b c x"},
	} {
		a, b := richPod(), richPod()
		a.Spec.Containers[0].Args, b.Spec.Containers[0].Args = strings.Fields(c[0]), strings.Fields(c[1])
		a.Spec.InitContainers[0].Command, b.Spec.InitContainers[0].Command = strings.Fields(c[1]), strings.Fields(c[0])
		pairs = append(pairs, [2]*corev1.Pod{a, b})
	}
	return pairs
}

// orderedOutputs renders ComparePods and go-cmp over orderedPairs.
func orderedOutputs() (ours, gocmp string) {
	var a, b bytes.Buffer
	for _, p := range orderedPairs() {
		fmt.Fprintln(&a, changeLines(ComparePods(p[0], p[1])))
		fmt.Fprintln(&b, changeLines(goCmpChanges(p[0], p[1])))
	}
	return a.String(), b.String()
}

// TestOrderedDeterministic compares the same revisions many times, with a
// walker reused as Replay reuses it, and gets the same changes each time.
func TestOrderedDeterministic(t *testing.T) {
	want, _ := orderedOutputs()
	var w walker
	pairs := orderedPairs()
	for i := range 200 {
		var b bytes.Buffer
		for _, p := range pairs {
			fmt.Fprintln(&b, changeLines(w.nextChanges(p[0], p[1])))
		}
		if b.String() != want {
			t.Fatalf("run %d differs:\n%s\nwant:\n%s", i, b.String(), want)
		}
	}
}

// TestOrderedDeterministicAcrossProcesses runs the comparisons of
// orderedPairs in processes started in different seconds: go-cmp picks the
// direction of its search once per process, from the time, so their go-cmp
// outputs can differ. ComparePods's must not.
func TestOrderedDeterministicAcrossProcesses(t *testing.T) {
	if os.Getenv("PODTRACE_ORDERED_CHILD") == "1" {
		ours, gocmp := orderedOutputs()
		out, _ := json.Marshal([2]string{ours, gocmp})
		fmt.Printf("ORDERED:%s\n", out)
		return
	}
	if testing.Short() {
		t.Skip("starts processes in different seconds")
	}
	want, _ := orderedOutputs()
	gocmpSeen := map[string]bool{}
	for i := 0; i < 8 && (i < 3 || len(gocmpSeen) < 2); i++ {
		if i > 0 {
			// go-cmp seeds its choice with the time in seconds.
			time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 10*time.Millisecond)))
		}
		cmd := exec.Command(os.Args[0], "-test.run", "^TestOrderedDeterministicAcrossProcesses$", "-test.count", "1")
		cmd.Env = append(os.Environ(), "PODTRACE_ORDERED_CHILD=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		_, line, ok := strings.Cut(string(out), "ORDERED:")
		if !ok {
			t.Fatalf("child printed no result:\n%s", out)
		}
		line, _, _ = strings.Cut(line, "\n")
		var got [2]string
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatal(err)
		}
		if got[0] != want {
			t.Fatalf("process %d: ComparePods differs:\n%s\nwant:\n%s", i, got[0], want)
		}
		gocmpSeen[got[1]] = true
	}
	t.Logf("go-cmp gave %d different outputs over the processes; ComparePods one", len(gocmpSeen))
}

// BenchmarkOrderedLists compares the ordered lists of orderedPairs (args of
// up to five elements, and a 40-element list with a change at each end)
// with the walker's edit script, and as the walker did before, with go-cmp.
func BenchmarkOrderedLists(b *testing.B) {
	long := func(first, last string) []string {
		out := make([]string, 40)
		for i := range out {
			out[i] = fmt.Sprintf("--flag-%d=value", i)
		}
		out[0], out[39] = first, last
		return out
	}
	lists := [][2][]string{{long("a", "b"), long("c", "d")}}
	for _, p := range orderedPairs() {
		lists = append(lists, [2][]string{p[0].Spec.Containers[0].Args, p[1].Spec.Containers[0].Args})
	}
	b.Run("walker", func(b *testing.B) {
		var w walker
		for b.Loop() {
			for _, l := range lists {
				w.changes = w.changes[:0]
				w.compare(reflect.ValueOf(l[0]), reflect.ValueOf(l[1]))
			}
		}
	})
	b.Run("go-cmp", func(b *testing.B) {
		var w walker
		for b.Loop() {
			for _, l := range lists {
				w.changes = w.changes[:0]
				w.delegate(reflect.ValueOf(l[0]), reflect.ValueOf(l[1]))
			}
		}
	})
}

// TestOrderedScriptNestedWork compares two lists of node selector terms
// whose every term, expression and value differs: deciding which terms are
// similar compares their expressions along scripts, and those their values.
// Each table is within its own bound (60 x 60 pairs), but nested they would
// be 3600^3 pairs; the work of one comparison is bounded (maxWorkCells),
// and the script is still a script from one list to the other.
func TestOrderedScriptNestedWork(t *testing.T) {
	terms := func(prefix string) []corev1.NodeSelectorTerm {
		out := make([]corev1.NodeSelectorTerm, 60)
		for i := range out {
			for j := range 60 {
				req := corev1.NodeSelectorRequirement{Key: fmt.Sprintf("%s-key-%d-%d", prefix, i, j), Operator: corev1.NodeSelectorOpIn}
				for k := range 60 {
					req.Values = append(req.Values, fmt.Sprintf("%s-%d-%d-%d", prefix, i, j, k))
				}
				out[i].MatchExpressions = append(out[i].MatchExpressions, req)
			}
		}
		return out
	}
	x, y := terms("x"), terms("y")
	work := maxWorkCells
	es := scriptWithin(reflect.ValueOf(x), reflect.ValueOf(y), &work)
	if work < 0 {
		t.Errorf("work left %d: the bound was overrun", work)
	}
	ix, iy := 0, 0
	for _, op := range es {
		switch op {
		case opSame:
			t.Fatalf("script %s keeps a term, but no two are equal", scriptString(es))
		case opModify:
			ix, iy = ix+1, iy+1
		case opRemove:
			ix++
		case opAdd:
			iy++
		}
	}
	if ix != len(x) || iy != len(y) {
		t.Fatalf("script %s does not cover both lists (%d of %d, %d of %d)", scriptString(es), ix, len(x), iy, len(y))
	}
}
