package diff

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podtrace/podtrace/store"
)

// TestGeneratedWalkUpToDate: zz_generated_walk.go is what walkgen writes
// for the API types in go.mod. After a k8s.io/api upgrade, run go generate
// in diff.
func TestGeneratedWalkUpToDate(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	cmd := exec.Command(gobin, "run", "./internal/walkgen", "-o", "-")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	want, err := cmd.Output()
	if err != nil {
		t.Fatalf("walkgen: %v\n%s", err, stderr.Bytes())
	}
	got, err := os.ReadFile("zz_generated_walk.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("zz_generated_walk.go is not what diff/internal/walkgen writes: run `go generate ./diff/`")
	}
}

// podStructTypes returns the struct types the reflective walker reaches
// from corev1.Pod through fields, pointers, lists and maps, with whether
// compareUnlike compares each with compareStruct and fields that are not
// nil (then it goes on through those fields only).
func podStructTypes() map[reflect.Type]bool {
	out := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			if t.Kind() == reflect.Map {
				walk(t.Key())
			}
			t = t.Elem()
		}
		if _, seen := out[t]; seen || t.Kind() != reflect.Struct {
			return
		}
		facts := factsOf(t)
		walked := t != quantityType && t != timeType && !(t.NumMethod() > 0 && facts.equal.IsValid()) && facts.fields != nil
		out[t] = walked
		if walked {
			for _, f := range facts.fields {
				walk(t.Field(f.index).Type)
			}
		}
	}
	walk(reflect.TypeFor[corev1.Pod]())
	return out
}

// TestTypedWalksCover: a function is generated for exactly the struct types
// of a pod that compareUnlike compares with compareStruct and fields that
// are not nil, by the walker's own rules (factsOf, equalTimes).
func TestTypedWalksCover(t *testing.T) {
	want := 0
	for st, structWalked := range podStructTypes() {
		facts := factsOf(st)
		_, generated := typedWalks[st]
		switch {
		case structWalked && !generated:
			t.Errorf("%v is compared field by field, but has no generated function", st)
		case !structWalked && generated:
			t.Errorf("%v has a generated function, but is not compared field by field", st)
		}
		if structWalked {
			want++
		}
		if generated != (facts.typed != nil) {
			t.Errorf("%v: factsOf does not hold its generated function", st)
		}
	}
	if len(typedWalks) != want {
		t.Errorf("%d generated functions, %d types of a pod compared field by field", len(typedWalks), want)
	}
	if want < 100 {
		t.Errorf("only %d struct types of a pod compared field by field: the reachability walk is broken", want)
	}
}

// walkBoth compares x and y, two values of one type, with the generated
// functions and with the reflective walker, and returns the changes each
// reports, in the order reported (not sorted by path).
func walkBoth(x, y reflect.Value) (typed, reflective []Change) {
	defer func(old bool) { walkTyped = old }(walkTyped)
	for _, on := range []bool{true, false} {
		walkTyped = on
		var w walker
		w.compare(x, y)
		if on {
			typed = w.changes
		} else {
			reflective = w.changes
		}
	}
	return typed, reflective
}

// checkTyped fails when the generated and the reflective walks of old and
// new (in both directions) report different changes, or report them in a
// different order.
func checkTyped(t *testing.T, name string, old, new any) int {
	t.Helper()
	n := 0
	for _, pair := range [][2]any{{old, new}, {new, old}} {
		x, y := reflect.ValueOf(pair[0]).Elem(), reflect.ValueOf(pair[1]).Elem()
		typed, reflective := walkBoth(x, y)
		if !sameChanges(typed, reflective) {
			t.Fatalf("%s: the generated walk differs from the reflective one (-reflective +generated):\n%s",
				name, cmp.Diff(reflective, typed, cmp.AllowUnexported(Change{})))
		}
		n += len(typed)
	}
	return n
}

// sameChanges reports whether a and b are the same changes in the same
// order, managedFields paths included.
func sameChanges(a, b []Change) bool {
	return slices.EqualFunc(a, b, func(x, y Change) bool {
		return x.Path == y.Path && x.Op == y.Op && x.Old == y.Old && x.New == y.New && x.Manager == y.Manager && slices.Equal(x.fields, y.fields)
	})
}

// TestTypedWalkFixtures compares consecutive revisions of the package's
// fixtures, decoded by the decoder (which shares their unchanged parts),
// with both walks.
func TestTypedWalkFixtures(t *testing.T) {
	crash, _ := crashLoop(100)
	r := rand.New(rand.NewPCG(7, 7))
	var mutated []*corev1.Pod
	p := richPod()
	for range 200 {
		if r.IntN(10) == 0 {
			p = richPod()
		} else {
			p = p.DeepCopy()
			mutate(p, r, 1+r.IntN(3))
		}
		mutated = append(mutated, p)
	}
	changes := 0
	for _, fx := range []struct {
		name string
		recs func() []*corev1.Pod
	}{
		{"history", func() []*corev1.Pod { return decodeAll(t, history(60)) }},
		{"crashLoop", func() []*corev1.Pod { return decodeAll(t, crash) }},
		{"richPod mutations", func() []*corev1.Pod { return mutated }},
	} {
		pods := fx.recs()
		changes += checkTyped(t, fx.name+" from nil", &corev1.Pod{}, pods[0])
		for i := 1; i < len(pods); i++ {
			changes += checkTyped(t, fmt.Sprintf("%s revision %d", fx.name, i), pods[i-1], pods[i])
		}
	}
	for i, m := range podMutations {
		r := rand.New(rand.NewPCG(1, uint64(i)))
		p := richPod()
		m(p, r)
		changes += checkTyped(t, fmt.Sprintf("mutation %d", i), richPod(), p)
	}
	if changes < 1000 {
		t.Errorf("only %d changes compared: the fixtures do not exercise the walks", changes)
	}
}

func decodeAll(t *testing.T, recs []store.Record) []*corev1.Pod {
	t.Helper()
	var dec decoder
	var pods []*corev1.Pod
	for _, rec := range recs {
		p, err := dec.decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		pods = append(pods, p)
	}
	return pods
}

// TestTypedWalkEveryField: for every generated type and every compared
// field of it, two values that differ in that field (set at random, the
// rest random too or equal) compare alike with both walks.
func TestTypedWalkEveryField(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	fields := 0
	for st := range typedWalks {
		for _, f := range factsOf(st).fields {
			for round := range 6 {
				x := reflect.New(st)
				if round%2 == 1 {
					fillValue(x.Elem(), r, 3)
				}
				y := reflect.New(st)
				y.Elem().Set(x.Elem()) // shares what the field does not replace
				fillValue(y.Elem().Field(f.index), r, 3)
				if round == 4 {
					y.Elem().Field(f.index).SetZero()
				}
				checkTyped(t, fmt.Sprintf("%v.%s round %d", st, st.Field(f.index).Name, round), x.Interface(), y.Interface())
			}
			fields++
		}
	}
	if fields < 500 {
		t.Errorf("only %d fields compared", fields)
	}
}

// TestTypedWalkRandomPods compares random pods with random mutations of
// them: each mutation copies what it changes and shares the rest with the
// pod it mutates, as the decoder does, so that the walks' tests of the
// same memory are exercised along with their comparisons.
func TestTypedWalkRandomPods(t *testing.T) {
	iterations := 1000
	if testing.Short() {
		iterations = 200
	}
	r := rand.New(rand.NewPCG(5, 5))
	crash, _ := crashLoop(20)
	bases := append(decodeAll(t, crash), richPod())
	changes := 0
	for i := range iterations {
		var base *corev1.Pod
		switch i % 3 {
		case 0:
			base = bases[r.IntN(len(bases))]
		case 1:
			base = richPod()
			mutate(base, r, r.IntN(4))
		default:
			base = &corev1.Pod{}
			fillValue(reflect.ValueOf(base).Elem(), r, 6)
		}
		a := mutatePod(base, r, r.IntN(3))
		b := mutatePod(a, r, 1+r.IntN(4))
		changes += checkTyped(t, fmt.Sprintf("random pair %d", i), a, b)
		changes += checkTyped(t, fmt.Sprintf("random pair %d against its base", i), base, b)
	}
	if changes < 10*iterations {
		t.Errorf("only %d changes in %d pairs: the mutations do not change enough", changes, iterations)
	}
}

// mutatePod returns p with n random mutations, sharing with p what they
// do not change.
func mutatePod(p *corev1.Pod, r *rand.Rand, n int) *corev1.Pod {
	for range n {
		c := *p
		mutateValue(reflect.ValueOf(&c).Elem(), r, 0)
		p = &c
	}
	return p
}

// mutateValue changes v, a value of its own (not shared), somewhere below:
// what it goes through is copied first, the rest stays shared.
func mutateValue(v reflect.Value, r *rand.Rand, depth int) {
	if depth > 12 || r.IntN(8) == 0 {
		fillValue(v, r, 2)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == quantityType || v.Type() == timeType || v.NumField() == 0 {
			fillValue(v, r, 2)
			return
		}
		i := r.IntN(v.NumField())
		if !v.Type().Field(i).IsExported() {
			fillValue(v, r, 2)
			return
		}
		mutateValue(v.Field(i), r, depth+1)
	case reflect.Pointer:
		switch {
		case v.IsNil() || r.IntN(4) == 0:
			if r.IntN(2) == 0 {
				v.SetZero()
			} else {
				fillValue(v, r, 3)
			}
		default:
			c := reflect.New(v.Type().Elem())
			c.Elem().Set(v.Elem())
			v.Set(c)
			mutateValue(c.Elem(), r, depth+1)
		}
	case reflect.Slice:
		n := v.Len()
		c := reflect.MakeSlice(v.Type(), n, n+1)
		reflect.Copy(c, v)
		switch op := r.IntN(7); {
		case op == 0:
			v.SetZero()
		case op == 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		case op == 2 || n == 0:
			e := reflect.New(v.Type().Elem()).Elem()
			fillValue(e, r, 3)
			i := r.IntN(n + 1)
			c = reflect.AppendSlice(reflect.MakeSlice(v.Type(), 0, n+1), v.Slice(0, i))
			c = reflect.Append(c, e)
			v.Set(reflect.AppendSlice(c, v.Slice(i, n)))
		case op == 3:
			i := r.IntN(n)
			c = reflect.AppendSlice(c.Slice(0, i), c.Slice(i+1, n))
			v.Set(c)
		case op == 4:
			i, j := r.IntN(n), r.IntN(n)
			ei := reflect.New(v.Type().Elem()).Elem()
			ei.Set(c.Index(i))
			c.Index(i).Set(c.Index(j))
			c.Index(j).Set(ei)
			v.Set(c)
		default:
			v.Set(c)
			mutateValue(c.Index(r.IntN(n)), r, depth+1)
		}
	case reflect.Map:
		c := reflect.MakeMap(v.Type())
		keys := v.MapKeys()
		for _, k := range keys {
			c.SetMapIndex(k, v.MapIndex(k))
		}
		switch op := r.IntN(5); {
		case op == 0:
			v.SetZero()
			return
		case op == 1 && len(keys) > 0:
			c.SetMapIndex(keys[r.IntN(len(keys))], reflect.Value{})
		case op == 2 && len(keys) > 0:
			k := keys[r.IntN(len(keys))]
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			mutateValue(e, r, depth+1)
			c.SetMapIndex(k, e)
		default:
			k := reflect.New(v.Type().Key()).Elem()
			fillValue(k, r, 1)
			e := reflect.New(v.Type().Elem()).Elem()
			fillValue(e, r, 3)
			c.SetMapIndex(k, e)
		}
		v.Set(c)
	default:
		fillValue(v, r, 2)
	}
}

var (
	randomStrings    = []string{"", "a", "b", "build", "helper", "10.0.0.1", "<x> & y", "name", "é", `"q"`}
	randomQuantities = []string{"0", "1", "1000m", "2", "250m", "1Gi", "1024Mi"}
	// Times that differ, and that are Equal but written differently (a
	// zone other than UTC, a zero time with a location).
	randomTimes = []time.Time{{}, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 10, 0, 1, 0, time.UTC),
		time.Date(2026, 12, 1, 11, 0, 1, 500, time.FixedZone("CET", 3600)), time.Time{}.In(time.FixedZone("CET", 3600))}
)

// fillValue sets v, settable, to a random value: scalars from small sets
// (so that equal values come up), pointers, lists and maps nil, empty or
// not, depth levels of them deep at most.
func fillValue(v reflect.Value, r *rand.Rand, depth int) {
	t := v.Type()
	switch {
	case t == quantityType:
		v.Set(reflect.ValueOf(resource.MustParse(randomQuantities[r.IntN(len(randomQuantities))])))
		return
	case t == timeType:
		v.Set(reflect.ValueOf(randomTimes[r.IntN(len(randomTimes))]))
		return
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString(randomStrings[r.IntN(len(randomStrings))])
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(r.IntN(4)))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(r.IntN(4)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(r.IntN(3)) / 2)
	case reflect.Pointer:
		if depth <= 0 || r.IntN(3) == 0 {
			v.SetZero()
			return
		}
		p := reflect.New(t.Elem())
		fillValue(p.Elem(), r, depth-1)
		v.Set(p)
	case reflect.Slice:
		if depth <= 0 || r.IntN(4) == 0 {
			v.SetZero()
			return
		}
		n := r.IntN(4)
		s := reflect.MakeSlice(t, n, n)
		for i := range n {
			fillValue(s.Index(i), r, depth-1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fillValue(v.Index(i), r, depth)
		}
	case reflect.Map:
		if depth <= 0 || r.IntN(4) == 0 {
			v.SetZero()
			return
		}
		m := reflect.MakeMap(t)
		for range r.IntN(4) {
			k := reflect.New(t.Key()).Elem()
			fillValue(k, r, depth-1)
			e := reflect.New(t.Elem()).Elem()
			fillValue(e, r, depth-1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() && (depth > 0 || r.IntN(2) == 0) {
				fillValue(v.Field(i), r, depth)
			}
		}
	case reflect.Interface:
		// Pods hold none; left nil.
	}
}

// BenchmarkWalkCrashLoop compares the revisions of one pod of the report
// benchmark, decoded once, with the generated functions and with the
// reflective walker: the walker's part of BenchmarkReplayCrashLoop.
func BenchmarkWalkCrashLoop(b *testing.B) {
	crash, _ := crashLoop(100)
	var dec decoder
	var pods []*corev1.Pod
	for _, rec := range crash {
		p, err := dec.decode(rec)
		if err != nil {
			b.Fatal(err)
		}
		pods = append(pods, p)
	}
	for _, typed := range []bool{true, false} {
		name := "generated"
		if !typed {
			name = "reflective"
		}
		b.Run(name, func(b *testing.B) {
			defer func(old bool) { walkTyped = old }(walkTyped)
			walkTyped = typed
			var w walker
			for b.Loop() {
				for i := 1; i < len(pods); i++ {
					w.nextChanges(pods[i-1], pods[i])
				}
			}
		})
	}
}
