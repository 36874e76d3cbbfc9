package tracer

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"
)

// pbRoot is a transcoded message: its transcoder and its typed path
// (Unmarshal, then the generated appender), which the transcoder must
// match.
type pbRoot struct {
	name  string
	fn    func(b, p []byte) []byte
	typed func(p []byte) ([]byte, error)
}

var pbRoots = []pbRoot{
	{"PodSpec", pbCorev1PodSpec, func(p []byte) ([]byte, error) {
		var v corev1.PodSpec
		if err := v.Unmarshal(p); err != nil {
			return nil, err
		}
		return appendTyped(func(b []byte) []byte { return appendCorev1PodSpec(b, &v) })
	}},
	{"PodStatus", pbCorev1PodStatus, func(p []byte) ([]byte, error) {
		var v corev1.PodStatus
		if err := v.Unmarshal(p); err != nil {
			return nil, err
		}
		return appendTyped(func(b []byte) []byte { return appendCorev1PodStatus(b, &v) })
	}},
	{"ObjectMeta", pbMetav1ObjectMeta, func(p []byte) ([]byte, error) {
		var v metav1.ObjectMeta
		if err := v.Unmarshal(p); err != nil {
			return nil, err
		}
		return appendTyped(func(b []byte) []byte { return appendMetav1ObjectMeta(b, &v) })
	}},
}

// appendTyped runs a generated appender; an encodeFailure (a value
// encoding/json rejects) is an error.
func appendTyped(fn func(b []byte) []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(encodeFailure)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("appender: %v", f.err)
		}
	}()
	return fn(nil), nil
}

// checkProto checks the transcoder's invariant for p: when the typed
// decode fails, the transcoder fails; when the transcoder succeeds, it
// writes the typed path's bytes, after a prefix it leaves alone. It returns
// whether the transcoder succeeded and whether the typed decode did.
func checkProto(t *testing.T, r pbRoot, what string, p []byte) (ok, typedOK bool) {
	t.Helper()
	want, err := r.typed(p)
	prefix := []byte("prefix")
	out, ok := appendProtoJSON(prefix[:len(prefix):len(prefix)], p, r.fn)
	if !bytes.Equal(out[:len(prefix)], []byte("prefix")) {
		t.Fatalf("%s %s: the prefix changed: %q", r.name, what, out)
	}
	if !ok {
		if len(out) != len(prefix) {
			t.Fatalf("%s %s: not ok, but b changed: %q", r.name, what, out)
		}
		return false, err == nil
	}
	if err != nil {
		t.Fatalf("%s %s: the typed decode fails (%v), the transcoder writes %s\nbytes: %x", r.name, what, err, out[len(prefix):], p)
	}
	if got := out[len(prefix):]; !bytes.Equal(got, want) {
		t.Fatalf("%s %s: the transcoder's JSON differs\ntyped:      %s\ntranscoder: %s\nbytes: %x", r.name, what, want, got, p)
	}
	return true, true
}

// pbFiller fills PodSpecs and PodStatuses with values protobuf keeps:
// quantities canonical or not, times of whole seconds or zero,
// IntOrStrings of both types, strings with characters JSON escapes, valid
// FieldsV1.
func pbFiller(seed int64) *randfill.Filler {
	quantities := []string{"100m", "1Gi", "0.5", "0", "1e3", "2Ki", "-5", "128974848", "129e6", "129M", "123Mi", "1.5", "500M", "12345678901234567890123", "1m"}
	return randfill.NewWithSeed(seed).NilChance(0.3).NumElements(0, 3).MaxDepth(12).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = resource.MustParse(quantities[c.Intn(len(quantities))])
		},
		func(s *string, c randfill.Continue) {
			*s = []string{"", "", "a", "web", "<b>&amp;", "\u2028", "é\xff", `"\`, "\x00\x1f"}[c.Intn(9)] + c.String(6)
		},
		func(tm *metav1.Time, c randfill.Continue) {
			if c.Intn(4) == 0 {
				*tm = metav1.Time{}
				return
			}
			*tm = metav1.Unix(1e9+c.Int63n(2e9), 0)
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(c.Int31() - 1<<30)
			} else {
				*v = intstr.FromString(c.String(8))
			}
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			f.Raw = []byte([]string{`{"f:a":{}}`, `{}`}[c.Intn(2)])
		},
	)
}

// TestProtoJSONRandom: the transcoders write what the typed decode and the
// appenders write, for random PodSpecs and PodStatuses, and the zero
// value for no bytes.
func TestProtoJSONRandom(t *testing.T) {
	for _, r := range pbRoots {
		for _, p := range [][]byte{nil, {}} {
			if ok, _ := checkProto(t, r, "empty", p); !ok {
				t.Fatalf("%s: not ok for no bytes", r.name)
			}
		}
	}
	const n = 1500
	deadline := time.Now().Add(6 * time.Second)
	f := pbFiller(7)
	iters, bytesTotal := 0, 0
	for i := range n {
		if time.Now().After(deadline) {
			break
		}
		var spec corev1.PodSpec
		var status corev1.PodStatus
		var meta metav1.ObjectMeta
		f.Fill(&spec)
		f.Fill(&status)
		f.Fill(&meta)
		for j, v := range []interface{ Marshal() ([]byte, error) }{&spec, &status, &meta} {
			p, err := v.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			bytesTotal += len(p)
			if ok, _ := checkProto(t, pbRoots[j], fmt.Sprintf("random %d", i), p); !ok {
				t.Fatalf("%s random %d: the transcoder fails on Marshal's bytes", pbRoots[j].name, i)
			}
		}
		iters++
	}
	if iters < 200 {
		t.Fatalf("only %d iterations", iters)
	}
	t.Logf("%d random PodSpecs, PodStatuses and ObjectMetas (%d bytes of protobuf each on average)", iters, bytesTotal/(3*iters))
}

// TestProtoJSONRecorded: the same for the pods of examples/trace.
func TestProtoJSONRecorded(t *testing.T) {
	pods := recordedPods(t)
	for i, pod := range pods {
		for j, v := range []interface{ Marshal() ([]byte, error) }{&pod.Spec, &pod.Status, &pod.ObjectMeta} {
			p, err := v.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if ok, _ := checkProto(t, pbRoots[j], fmt.Sprintf("recorded pod %d", i), p); !ok {
				t.Fatalf("%s of recorded pod %d: the transcoder fails", pbRoots[j].name, i)
			}
		}
	}
	t.Logf("%d recorded pods", len(pods))
}

// TestProtoJSONConcurrent: the transcoders run at once in several
// goroutines (the informers' handlers do; pbQuantity's cache is shared)
// and write what the typed path writes.
func TestProtoJSONConcurrent(t *testing.T) {
	var inputs [][]byte
	var wants [][]byte
	pods := append(recordedPods(t), benchPod())
	for _, pod := range pods {
		p, _ := pod.Spec.Marshal()
		want, err := pbRoots[0].typed(p)
		if err != nil {
			t.Fatal(err)
		}
		inputs, wants = append(inputs, p), append(wants, want)
	}
	errs := make(chan string, 4)
	for g := range 4 {
		go func() {
			var buf []byte
			for i := range 200 {
				k := (i + g) % len(inputs)
				var ok bool
				buf, ok = appendProtoJSON(buf[:0], inputs[k], pbCorev1PodSpec)
				if !ok || !bytes.Equal(buf, wants[k]) {
					errs <- fmt.Sprintf("goroutine %d, pod %d: ok %v, JSON differs: %s", g, k, ok, buf)
					return
				}
			}
			errs <- ""
		}()
	}
	for range 4 {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
}

// pbRaw is a field of a protobuf message as it is on the wire.
type pbRaw struct {
	key []byte // the tag's bytes
	num int32
	wt  uint64
	val []byte // the value's bytes, after the tag (length included for wire type 2)
	sub []byte // wire type 2: the bytes after the length
}

// pbSplit splits a well-formed message into its fields.
func pbSplit(t *testing.T, p []byte) []pbRaw {
	fs, ok := pbTrySplit(p)
	if !ok {
		t.Fatalf("not a message: %x", p)
	}
	return fs
}

// pbTrySplit splits p into fields of wire types 0 and 2, if it is that.
func pbTrySplit(p []byte) ([]pbRaw, bool) {
	var fs []pbRaw
	for i := 0; i < len(p); {
		key, n := binary.Uvarint(p[i:])
		if n <= 0 || key>>3 == 0 {
			return nil, false
		}
		f := pbRaw{key: p[i : i+n], num: int32(key >> 3), wt: key & 7}
		i += n
		switch f.wt {
		case 0:
			_, m := binary.Uvarint(p[i:])
			if m <= 0 {
				return nil, false
			}
			f.val = p[i : i+m]
			i += m
		case 2:
			l, m := binary.Uvarint(p[i:])
			if m <= 0 || l > uint64(len(p)-i-m) {
				return nil, false
			}
			f.val = p[i : i+m+int(l)]
			f.sub = p[i+m : i+m+int(l)]
			i += m + int(l)
		default:
			return nil, false
		}
		fs = append(fs, f)
	}
	return fs, true
}

// pbMutateNested applies fn to the fields of a message nested in p at
// random (p itself at times), re-encoding the lengths on the way out.
func pbMutateNested(rng *rand.Rand, p []byte, fn func([]pbRaw) []pbRaw) []byte {
	fs, ok := pbTrySplit(p)
	if !ok {
		return p
	}
	var subs []int
	for i, f := range fs {
		if f.wt == 2 && len(f.sub) > 0 {
			if _, ok := pbTrySplit(f.sub); ok {
				subs = append(subs, i)
			}
		}
	}
	if len(subs) == 0 || rng.Intn(4) == 0 {
		return pbJoin(fn(fs))
	}
	i := subs[rng.Intn(len(subs))]
	fs[i] = pbLenField(fs[i].num, pbMutateNested(rng, fs[i].sub, fn))
	return pbJoin(fs)
}

func pbJoin(fs []pbRaw) []byte {
	var out []byte
	for _, f := range fs {
		out = append(out, f.key...)
		out = append(out, f.val...)
	}
	return out
}

func pbKey(num int32, wt uint64) []byte {
	return binary.AppendUvarint(nil, uint64(num)<<3|wt)
}

func pbLenField(num int32, sub []byte) pbRaw {
	return pbRaw{key: pbKey(num, 2), num: num, wt: 2, val: append(binary.AppendUvarint(nil, uint64(len(sub))), sub...), sub: sub}
}

// pbRewrite applies fn to the fields of the message at path (field numbers
// of nested messages, every occurrence) in p, re-encoding the lengths.
func pbRewrite(t *testing.T, p []byte, path []int32, fn func([]pbRaw) []pbRaw) []byte {
	fs := pbSplit(t, p)
	if len(path) == 0 {
		return pbJoin(fn(fs))
	}
	for i, f := range fs {
		if f.num == path[0] && f.wt == 2 {
			fs[i] = pbLenField(f.num, pbRewrite(t, f.sub, path[1:], fn))
		}
	}
	return pbJoin(fs)
}

// TestProtoJSONHostile: for bytes mutated from valid messages (bytes
// flipped, truncated, fields duplicated, unknown fields, varints packed,
// map entries duplicated or partial, wrong wire types, field numbers past
// int32), a typed decode that fails means the transcoder fails, and a
// transcoder that succeeds writes what the typed path writes. The mutations
// that keep the message canonical for the API server's purposes (unknown
// fields, packed varints, duplicate map keys, partial map entries) must
// succeed.
func TestProtoJSONHostile(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	var inputs [][3][]byte
	for _, pod := range recordedPods(t) {
		s, _ := pod.Spec.Marshal()
		st, _ := pod.Status.Marshal()
		m, _ := pod.ObjectMeta.Marshal()
		inputs = append(inputs, [3][]byte{s, st, m})
	}
	f := pbFiller(99)
	for range 150 {
		var spec corev1.PodSpec
		var status corev1.PodStatus
		var meta metav1.ObjectMeta
		f.Fill(&spec)
		f.Fill(&status)
		f.Fill(&meta)
		// some values that reach the packed and map cases
		spec.SecurityContext = &corev1.PodSecurityContext{SupplementalGroups: []int64{1, 1 << 40, -1}}
		spec.NodeSelector = map[string]string{"a": "1", "b": "2"}
		meta.Labels = map[string]string{"app": "web", "tier": "1"}
		s, _ := spec.Marshal()
		st, _ := status.Marshal()
		m, _ := meta.Marshal()
		inputs = append(inputs, [3][]byte{s, st, m})
	}
	type tally struct{ ok, notOK, typedOKNotOK int }
	counts := map[string]*tally{}
	mustOK := map[string]bool{}
	var orig []byte
	try := func(kind string, r pbRoot, p []byte, must bool) {
		if kind != "original" && bytes.Equal(p, orig) {
			return // the mutation found nothing to change
		}
		ok, typedOK := checkProto(t, r, kind, p)
		c := counts[kind]
		if c == nil {
			c = &tally{}
			counts[kind] = c
		}
		if ok {
			c.ok++
		} else {
			c.notOK++
			if typedOK {
				c.typedOKNotOK++
			}
		}
		if must {
			mustOK[kind] = true
			if !ok {
				t.Fatalf("%s %s: the transcoder fails on canonical bytes %x", r.name, kind, p)
			}
		}
	}
	mutate := func(p []byte) []byte { return append([]byte(nil), p...) }
	for _, in := range inputs {
		for j, p := range in {
			r := pbRoots[j]
			orig = p
			try("original", r, p, true)
			for range 8 {
				if len(p) == 0 {
					break
				}
				q := mutate(p)
				q[rng.Intn(len(q))] = byte(rng.Intn(256))
				try("byte changed", r, q, false)
				q = mutate(p)
				q[rng.Intn(len(q))] ^= 1 << rng.Intn(8)
				try("bit flipped", r, q, false)
				try("truncated", r, p[:rng.Intn(len(p))], false)
			}
			fs := pbSplit(t, p)
			if len(fs) > 0 {
				// a field twice: scalars take the last value, messages merge
				k := rng.Intn(len(fs))
				dup := append(append(append([]pbRaw(nil), fs[:k+1]...), fs[k]), fs[k+1:]...)
				try("field duplicated", r, pbJoin(dup), false)
				// a wrong wire type for a known field
				wrong := append([]pbRaw(nil), fs...)
				w := wrong[k]
				if w.wt == 2 {
					w.key, w.val = pbKey(w.num, 0), []byte{1}
				} else {
					w.key, w.val = pbKey(w.num, 2), []byte{0}
				}
				wrong[k] = w
				try("wrong wire type", r, pbJoin(wrong), false)
				// a field number past int32: gogo reads int32(key>>3)
				big := append([]pbRaw(nil), fs...)
				big[k].key = binary.AppendUvarint(nil, (uint64(1)<<32|uint64(big[k].num))<<3|big[k].wt)
				try("field number past int32", r, pbJoin(big), false)
			}
			// in a nested message: a field twice, fields reordered (which
			// keeps repeated fields' order), a field dropped
			for range 6 {
				try("nested field duplicated", r, pbMutateNested(rng, p, func(fs []pbRaw) []pbRaw {
					if len(fs) == 0 {
						return fs
					}
					k := rng.Intn(len(fs))
					return append(append(append([]pbRaw(nil), fs[:k+1]...), fs[k]), fs[k+1:]...)
				}), false)
				try("nested fields reordered", r, pbMutateNested(rng, p, func(fs []pbRaw) []pbRaw {
					if len(fs) < 2 {
						return fs
					}
					k := rng.Intn(len(fs) - 1)
					fs[k], fs[k+1] = fs[k+1], fs[k]
					return fs
				}), false)
				try("nested field dropped", r, pbMutateNested(rng, p, func(fs []pbRaw) []pbRaw {
					if len(fs) == 0 {
						return fs
					}
					k := rng.Intn(len(fs))
					return append(append([]pbRaw(nil), fs[:k]...), fs[k+1:]...)
				}), false)
			}
			// unknown fields, at the top and in nested messages
			unknown := func(fs []pbRaw) []pbRaw {
				return append(fs,
					pbRaw{key: pbKey(1000, 0), val: []byte{0x96, 0x01}},
					pbRaw{key: pbKey(536870911, 2), val: []byte{3, 'a', 'b', 'c'}},
					pbRaw{key: pbKey(999, 1), val: make([]byte, 8)},
					pbRaw{key: pbKey(998, 5), val: make([]byte, 4)})
			}
			try("unknown fields", r, pbRewrite(t, p, nil, unknown), true)
			if j == 0 {
				try("unknown fields in containers", r, pbRewrite(t, p, []int32{2}, unknown), true)
				try("unknown fields in resources", r, pbRewrite(t, p, []int32{2, 8}, unknown), true)
				// supplementalGroups (PodSecurityContext field 4) packed
				packed := pbRewrite(t, p, []int32{14}, func(fs []pbRaw) []pbRaw {
					var out []pbRaw
					var vals []byte
					at := -1
					for _, f := range fs {
						if f.num == 4 && f.wt == 0 {
							vals = append(vals, f.val...)
							if at < 0 {
								at = len(out)
								out = append(out, pbRaw{})
							}
							continue
						}
						out = append(out, f)
					}
					if at >= 0 {
						out[at] = pbLenField(4, vals)
						out = append(out, pbLenField(4, nil), pbRaw{key: pbKey(4, 0), val: []byte{7}})
					}
					return out
				})
				try("varints packed", r, packed, true)
				// nodeSelector (field 7): a key twice, the last wins;
				// entries without value, without key, empty
				entry := func(k, v string) []byte {
					e := append(pbKey(1, 2), byte(len(k)))
					e = append(e, k...)
					e = append(e, pbKey(2, 2)...)
					e = append(e, byte(len(v)))
					return append(e, v...)
				}
				dupKeys := pbRewrite(t, p, nil, func(fs []pbRaw) []pbRaw {
					return append(fs, pbLenField(7, entry("a", "first")), pbLenField(7, entry("z", "z")), pbLenField(7, entry("a", "second")))
				})
				try("map keys duplicated", r, dupKeys, true)
				partial := pbRewrite(t, p, nil, func(fs []pbRaw) []pbRaw {
					return append(fs, pbLenField(7, append(pbKey(1, 2), 1, 'k')), pbLenField(7, append(pbKey(2, 2), 1, 'v')), pbLenField(7, nil))
				})
				try("map entries partial", r, partial, true)
				// resources.limits (Container field 8, ResourceRequirements
				// field 1): a quantity twice, one without value
				limits := pbRewrite(t, p, []int32{2, 8}, func(fs []pbRaw) []pbRaw {
					q := func(s string) []byte { return append(append(pbKey(1, 2), byte(len(s))), s...) }
					e := func(k string, v []byte) []byte {
						out := append(append(pbKey(1, 2), byte(len(k))), k...)
						if v != nil {
							out = append(out, pbLenField(2, v).key...)
							out = append(out, pbLenField(2, v).val...)
						}
						return out
					}
					return append(fs, pbLenField(1, e("cpu", q("1"))), pbLenField(1, e("cpu", q("250m"))), pbLenField(1, e("memory", nil)))
				})
				try("quantity map keys duplicated", r, limits, true)
				badQuantity := pbRewrite(t, p, []int32{2, 8}, func(fs []pbRaw) []pbRaw {
					e := append(append(pbKey(1, 2), 3), "cpu"...)
					e = append(e, pbLenField(2, append(pbKey(1, 2), 2, 'x', 'y')).key...)
					e = append(e, pbLenField(2, append(pbKey(1, 2), 2, 'x', 'y')).val...)
					return append(fs, pbLenField(1, e))
				})
				try("quantity invalid", r, badQuantity, false)
			}
		}
	}
	total := tally{}
	for _, kind := range sortedKeys(counts) {
		c := counts[kind]
		t.Logf("%-30s ok %5d  not ok %5d (typed decode ok: %d)", kind, c.ok, c.notOK, c.typedOKNotOK)
		total.ok += c.ok
		total.notOK += c.notOK
		total.typedOKNotOK += c.typedOKNotOK
	}
	t.Logf("%-30s ok %5d  not ok %5d (typed decode ok: %d)", "all", total.ok, total.notOK, total.typedOKNotOK)
	for kind := range mustOK {
		if counts[kind].ok == 0 {
			t.Errorf("%s: no input", kind)
		}
	}
	// valid messages, each field once: the transcoder never declines
	for _, kind := range []string{"nested fields reordered", "nested field dropped", "field number past int32"} {
		if c := counts[kind]; c == nil || c.ok == 0 || c.typedOKNotOK != 0 {
			t.Errorf("%s: %+v, want all that decode typed transcoded", kind, c)
		}
	}
	if counts["quantity invalid"].ok != 0 {
		t.Errorf("an invalid quantity was transcoded")
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := 1; i < len(ks); i++ {
		for j := i; j > 0 && ks[j-1] > ks[j]; j-- {
			ks[j-1], ks[j] = ks[j], ks[j-1]
		}
	}
	return ks
}

// BenchmarkTranscode: the JSON of the spec and status of pods from their
// protobuf, by the transcoders and by the typed decode and the appenders,
// for the pods of examples/trace ("recorded") and benchPod ("synthetic",
// with resource requests). ns/pod is per pod (spec and status).
func BenchmarkTranscode(b *testing.B) {
	sets := []struct {
		name string
		pods []*corev1.Pod
	}{{"recorded", recordedPods(b)}, {"synthetic", []*corev1.Pod{benchPod()}}}
	for _, set := range sets {
		var specs, statuses [][]byte
		for _, pod := range set.pods {
			s, _ := pod.Spec.Marshal()
			st, _ := pod.Status.Marshal()
			specs, statuses = append(specs, s), append(statuses, st)
		}
		buf := make([]byte, 0, 64<<10)
		b.Run(set.name+"/transcoder", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for i := range specs {
					var ok bool
					if buf, ok = appendProtoJSON(buf[:0], specs[i], pbCorev1PodSpec); !ok {
						b.Fatal("spec not ok")
					}
					if buf, ok = appendProtoJSON(buf[:0], statuses[i], pbCorev1PodStatus); !ok {
						b.Fatal("status not ok")
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(specs)), "ns/pod")
		})
		b.Run(set.name+"/typed", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for i := range specs {
					var spec corev1.PodSpec
					if err := spec.Unmarshal(specs[i]); err != nil {
						b.Fatal(err)
					}
					buf = appendCorev1PodSpec(buf[:0], &spec)
					var status corev1.PodStatus
					if err := status.Unmarshal(statuses[i]); err != nil {
						b.Fatal(err)
					}
					buf = appendCorev1PodStatus(buf[:0], &status)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(specs)), "ns/pod")
		})
	}
}

// FuzzProtoJSON: the invariant of checkProto, for PodSpec and PodStatus, on
// any bytes (seeded with the recorded pods').
//
// Inputs with a quantity of a large negative exponent ("1e-999999999") are
// skipped: resource.ParseQuantity takes time exponential in its digits
// (38 ms for 1e-999999), in the typed decode as in the transcoders (which
// decode quantities typed); the API server sends only validated quantities.
func FuzzProtoJSON(f *testing.F) {
	slowQuantity := regexp.MustCompile(`[eE]-[0-9]{5}`)
	for _, pod := range recordedPods(f) {
		s, _ := pod.Spec.Marshal()
		st, _ := pod.Status.Marshal()
		f.Add(s, false)
		f.Add(st, true)
	}
	f.Fuzz(func(t *testing.T, p []byte, status bool) {
		if slowQuantity.Match(p) {
			t.Skip("quantity with a large negative exponent")
		}
		r := pbRoots[0]
		if status {
			r = pbRoots[1]
		}
		checkProto(t, r, "fuzzed", p)
	})
}
