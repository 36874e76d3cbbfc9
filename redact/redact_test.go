package redact

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestRedact(t *testing.T) {
	lc := &diff.Lifecycle{Steps: []diff.Step{{Changes: []diff.Change{
		{Path: "spec.containers[app]", Op: diff.OpAdd, New: `{"name":"app","image":"app:1","args":["--password","hunter2","--db-token=abc123","--verbose"],"env":[{"name":"DB_PASSWORD","value":"s3cret"},{"name":"FROM_SECRET","valueFrom":{"secretKeyRef":{"name":"db","key":"pw"}}},{"name":"CUSTOMER","value":"acme"}]}`},
		{Path: "spec.containers[app].env[LOG_LEVEL].value", Op: diff.OpChange, Old: "info", New: "debug"},
		{Path: "spec.containers[app].env[API_URL]", Op: diff.OpAdd, New: `{"name":"API_URL","value":"https://internal.example"}`},
		{Path: "metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]", Op: diff.OpAdd, New: `{"apiVersion":"v1","kind":"Pod"}`},
		{Path: "metadata.annotations", Op: diff.OpAdd, New: `{"team":"payments","billing/account":"4242","kubectl.kubernetes.io/last-applied-configuration":"{}"}`},
		{Path: "spec.containers[app].command", Op: diff.OpAdd, New: `["sh","-c","curl -H 'Authorization: Bearer x' --token xyz https://svc?api_key=k1"]`},
		{Path: "metadata.labels[app]", Op: diff.OpAdd, New: "web"},
		{Path: "status.phase", Op: diff.OpChange, Old: "Pending", New: "Running"},
	}}}}
	r, err := New([]string{"billing/account", "CUSTOMER", `acme-[0-9]+`})
	if err != nil {
		t.Fatal(err)
	}
	counts := r.Redact(&explain.Lifecycle{Lifecycle: lc})
	got := ""
	for _, c := range lc.Steps[0].Changes {
		got += c.Path + "\n  old: " + c.Old + "\n  new: " + c.New + "\n"
	}
	got += "summary: " + Summary(counts) + "\n"
	path := filepath.Join("testdata", "redact.golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./redact -update writes it)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("redaction (-want +got), go test ./redact -update if intended:\n%s", d)
	}
	for _, secret := range []string{"hunter2", "abc123", "s3cret", "debug", "internal.example", "4242", "xyz", "k1", `"kind":"Pod"`} {
		if contains(got, secret) {
			t.Errorf("redacted output still carries %q", secret)
		}
	}
	for _, kept := range []string{"secretKeyRef", "DB_PASSWORD", "payments", "app:1", "Running", "--verbose"} {
		if !contains(got, kept) {
			t.Errorf("redaction lost %q, which is structure, not a secret", kept)
		}
	}
}

func TestNewBadPattern(t *testing.T) {
	if _, err := New([]string{"(unclosed"}); err == nil {
		t.Error("New accepted an invalid regular expression")
	}
}

func contains(s, sub string) bool {
	return len(sub) > 0 && len(s) >= len(sub) && (s == sub || indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestRedactAuditAndEvents(t *testing.T) {
	lc := &diff.Lifecycle{
		Events: []diff.Event{{Reason: "Failed", Message: `pull failed: --token=abc123xyz`}},
		Audit: &diff.Audit{
			Denied: []diff.DeniedRequests{{Message: `denied: password=hunter2hunter2`}},
			Patches: []diff.WebhookPatch{{Webhook: "inject", Ops: []diff.PatchOp{
				{Op: "add", Path: "/spec/containers/-", Value: json.RawMessage(`{"name":"proxy","env":[{"name":"KEY","value":"sidecarsecret"}]}`)},
				{Op: "add", Path: "/spec/containers/0/env/1/value", Value: json.RawMessage(`"plainsecret"`)},
				{Op: "replace", Path: "/spec/containers/0/image", Value: json.RawMessage(`"alpine@sha256:abc"`)},
			}}},
		},
	}
	r, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Redact(&explain.Lifecycle{Lifecycle: lc})
	b, _ := json.Marshal(lc)
	for _, s := range []string{"abc123xyz", "hunter2hunter2", "sidecarsecret", "plainsecret"} {
		if strings.Contains(string(b), s) {
			t.Errorf("%q survived redaction: %s", s, b)
		}
	}
	for _, s := range []string{"alpine@sha256:abc", "proxy", "KEY", "pull failed"} {
		if !strings.Contains(string(b), s) {
			t.Errorf("redaction lost %q: %s", s, b)
		}
	}
}

// refRedactor is the Redactor as it was before its prefilters and its
// cache: every string through the regular expressions, every JSON value
// decoded. The tests below hold Redactor to it, byte for byte and count for
// count.
type refRedactor struct {
	Keys     map[string]bool
	Patterns []*regexp.Regexp
	counts   map[string]int
}

func newRefRedactor(r *Redactor) *refRedactor {
	return &refRedactor{Keys: r.Keys, Patterns: r.Patterns, counts: map[string]int{}}
}

// Redact rewrites the lifecycle's change values in place and returns how
// many values each rule redacted.
func (r *refRedactor) Redact(lc *diff.Lifecycle) map[string]int {
	r.counts = map[string]int{}
	for i := range lc.Steps {
		for j := range lc.Steps[i].Changes {
			r.change(&lc.Steps[i].Changes[j])
		}
	}
	if lc.Admission != nil {
		for i := range lc.Admission.Changes {
			r.change(&lc.Admission.Changes[i].Change)
		}
	}
	for i := range lc.Events {
		lc.Events[i].Message = r.text(lc.Events[i].Message)
	}
	if a := lc.Audit; a != nil {
		for i := range a.Denied {
			a.Denied[i].Message = r.text(a.Denied[i].Message)
		}
		for i := range a.Patches {
			for j := range a.Patches[i].Ops {
				r.patchOp(&a.Patches[i].Ops[j])
			}
		}
	}
	if len(r.counts) > 0 {
		lc.Redacted = r.counts
	}
	return r.counts
}

// patchOp redacts the value of one JSONPatch operation of a webhook: an env
// value by its path (/spec/containers/0/env/1/value), anything else as a
// change value.
func (r *refRedactor) patchOp(op *diff.PatchOp) {
	if len(op.Value) == 0 {
		return
	}
	segs := strings.Split(op.Path, "/")
	last := segs[len(segs)-1]
	if last == "value" && len(segs) >= 3 && segs[len(segs)-3] == "env" {
		op.Value = json.RawMessage(`"` + r.mark("env values") + `"`)
		return
	}
	key := last
	if _, err := fmt.Sscan(last, new(int)); err == nil && len(segs) >= 2 || last == "-" {
		key = segs[len(segs)-2] // an element of a list: its list's name
	}
	var s string
	if json.Unmarshal(op.Value, &s) == nil {
		if red := r.text(s); red != s {
			b, _ := json.Marshal(red)
			op.Value = b
		}
		return
	}
	if red := r.value(string(op.Value), key); red != string(op.Value) {
		op.Value = json.RawMessage(red)
	}
}

// RedactObject redacts a recorded object's JSON the way Redact redacts
// change values: env values, credentials in arguments and values, the
// last-applied-configuration annotation, the user's keys and patterns. It
// returns raw itself when nothing needed redacting, and counts what it did
// in Counts.
func (r *refRedactor) RedactObject(raw []byte) ([]byte, error) {
	if r.counts == nil {
		r.counts = map[string]int{}
	}
	var x any
	if err := json.Unmarshal(raw, &x); err != nil {
		return nil, fmt.Errorf("redact: %w", err)
	}
	before := r.total()
	x = r.walk(x, "")
	if r.total() == before {
		return raw, nil
	}
	return json.Marshal(x)
}

var refEnvValuePath = regexp.MustCompile(`\.env\[([^\]]+)\]\.value$`)

func (r *refRedactor) change(c *diff.Change) {
	for _, v := range []*string{&c.Old, &c.New} {
		if *v == "" {
			continue
		}
		switch {
		case refEnvValuePath.MatchString(c.Path):
			*v = r.mark("env values")
		case strings.HasSuffix(c.Path, "["+lastApplied+"]"):
			*v = r.mark("last-applied-configuration annotations")
		case r.keyPath(c.Path):
			*v = r.mark("values of --redact keys")
		default:
			*v = r.value(*v, contextKey(c.Path))
		}
	}
}

// keyPath reports whether the path ends at an env var, annotation or label
// named by the user.
func (r *refRedactor) keyPath(path string) bool {
	if len(r.Keys) == 0 || !strings.HasSuffix(path, "]") {
		return false
	}
	trimmed := strings.TrimSuffix(path, ".value")
	i := strings.LastIndex(trimmed, "[")
	return i >= 0 && r.Keys[strings.TrimSuffix(trimmed[i+1:], "]")]
}

func (r *refRedactor) total() int {
	n := 0
	for _, c := range r.counts {
		n += c
	}
	return n
}

func (r *refRedactor) mark(rule string) string {
	r.counts[rule]++
	return Redacted
}

// value redacts inside one rendered value: JSON objects and lists are walked
// (env values, last-applied annotations, user keys), strings are matched
// against the credential rule and the user's patterns.
func (r *refRedactor) value(v, key string) string {
	if strings.HasPrefix(v, "{") || strings.HasPrefix(v, "[") {
		var x any
		if json.Unmarshal([]byte(v), &x) == nil {
			before := r.total()
			x = r.walk(x, key)
			if r.total() == before {
				return v // nothing redacted: keep the value as rendered
			}
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			if enc.Encode(x) == nil {
				return strings.TrimSuffix(b.String(), "\n")
			}
		}
	}
	return r.text(v)
}

func (r *refRedactor) walk(x any, key string) any {
	switch t := x.(type) {
	case map[string]any:
		for k, v := range t {
			switch {
			case key == "env" && k == "value":
				t[k] = r.mark("env values")
			case k == lastApplied:
				t[k] = r.mark("last-applied-configuration annotations")
			case r.Keys[k] && (key == "annotations" || key == "labels"):
				t[k] = r.mark("values of --redact keys")
			case key == "env" && k == "name":
			default:
				t[k] = r.walk(v, k)
			}
		}
		if key == "env" {
			if name, ok := t["name"].(string); ok && r.Keys[name] {
				if _, ok := t["value"]; ok && t["value"] != Redacted {
					t["value"] = r.mark("values of --redact keys")
				}
			}
		}
		return t
	case []any:
		for i, v := range t {
			// args: ["--password", "x"]: the flag's value is the next element.
			if s, ok := v.(string); ok && i > 0 && r.followsFlag(t[i-1]) {
				if s != Redacted {
					t[i] = r.mark("credentials in arguments and values")
				}
				continue
			}
			t[i] = r.walk(v, key)
		}
		return t
	case string:
		return r.text(t)
	}
	return x
}

func (r *refRedactor) followsFlag(prev any) bool {
	s, ok := prev.(string)
	return ok && credentialFlag.MatchString(s)
}

// text redacts credentials and user patterns inside a string.
func (r *refRedactor) text(s string) string {
	out := credential.ReplaceAllStringFunc(s, func(m string) string {
		sub := credential.FindStringSubmatch(m)
		r.counts["credentials in arguments and values"]++
		return sub[1] + Redacted
	})
	for _, re := range r.Patterns {
		out = re.ReplaceAllStringFunc(out, func(string) string { return r.mark("matches of --redact patterns") })
	}
	return out
}

// realTexts are strings as pods, events and audit logs carry them.
var realTexts = []string{
	"", "Running", "[redacted]", "alpine:3.20", "containerd://0123abcd",
	"--password=hunter2", "--password hunter2", "-token abc", "--db-token=abc123 --verbose",
	"DB_PASSWORD: s3cret", "db_password : 's3 cret'", `api_key="k 1"`, "API-KEY=xyz,next", "apikey:k2",
	"curl -H 'Authorization: Bearer eyJhbGciOi.x.y' https://svc", "Authorization: Basic dXNlcjpwYXNz",
	"BEARER tok", "xbearer tok", "bearer\ttok", "basic\n\"q w\"",
	"https://user:pass@db.example:5432/app?sslmode=disable&password=p4ss&token=t0k",
	"postgres://app:secret@db/app", "secret", "SECRET=", "secret= ", "my.secret-token_name = v",
	"--credentials /etc/creds.json", "credential:x", "CREDENTIALS=a,b", "passwd:x", "passw=x",
	`{"password":"x","token":"y"}`, `{"env":[{"name":"A","value":"b"}]}`, `["--token","x"]`,
	"Failed to pull image \"registry/app:1\": rpc error: code = Unknown desc = failed to authorize: failed to fetch oauth token: unexpected status: 401 Unauthorized",
	"Back-off restarting failed container build in pod job_ci(uid-1)",
	`admission webhook "finalizers.digester.example" denied the request: finalizer removal requires token=abcd`,
	"Pod sandbox changed, it will be killed and re-created.",
	"ſecret=x", "to\u212aen: y", "api\u212aey=z", "paſſword=w", "passwordé=v", "password=é日本",
	"password=\xff\xfe", "\xffpassword=x", "SECRET\u00a0=x", "token\u2028=x",
	"TOKEN=a TOKEN=b token:c", "--token", "--token\n", " --api-key  k", "a --secret s --b",
	"--password=\"unterminated", "password='", "password=\"\"", "password=,", "password= \"a b\" c",
}

// textPieces make up generated strings: the words the rules look for in
// several cases and spellings, separators, values and filler.
var textPieces = []string{
	"password", "PassWord", "PASSWD", "passw", "secret", "Secret", "token", "TOKEN", "toKen",
	"api_key", "api-key", "apikey", "API_Key", "api", "key", "credential", "Credentials", "credentia",
	"bearer", "Bearer", "basic", "BASIC", "ſ", "\u212a", "K", "k", "s",
	"=", ":", " ", "  ", "\t", "\n", "\r", "\v", "\f", "-", "--", "_", ".", ",", "\"", "'", "/", "@", "?", "&", "\\",
	"{", "}", "[", "]", "x", "hunter2", "abc123", "DB", "url", "https://", "é", "日本", "\xff", "\u00a0", "[redacted]",
}

// genText makes a string of up to 14 pieces.
func genText(rng *rand.Rand) string {
	var b strings.Builder
	for range rng.IntN(15) {
		b.WriteString(textPieces[rng.IntN(len(textPieces))])
	}
	return b.String()
}

// texts are realTexts and n generated strings.
func texts(rng *rand.Rand, n int) []string {
	out := append([]string(nil), realTexts...)
	for range n {
		out = append(out, genText(rng))
	}
	return out
}

var patternSets = [][]string{
	nil,
	{"billing/account", "CUSTOMER"},
	{`acme-[0-9]+`, "CUSTOMER"},
	{`(?i)SECRET`, `[0-9]{4}`, `redacted`},
}

func TestTextMatchesReference(t *testing.T) {
	all := texts(rand.New(rand.NewPCG(1, 2)), 5000)
	for _, patterns := range patternSets {
		r, err := New(patterns)
		if err != nil {
			t.Fatal(err)
		}
		r.counts = map[string]int{}
		ref := newRefRedactor(r)
		changed := 0
		for pass := range 2 { // the second pass reads the cache
			for _, s := range all {
				got, want := r.text(s), ref.text(s)
				if got != want {
					t.Fatalf("patterns %q, pass %d: text(%q) = %q, want %q", patterns, pass, s, got, want)
				}
				if want != s {
					changed++
				}
			}
		}
		if d := cmp.Diff(ref.counts, r.counts); d != "" {
			t.Errorf("patterns %q: counts (-want +got):\n%s", patterns, d)
		}
		if changed < len(all)/20 || changed > len(all)*2-len(all)/20 {
			t.Errorf("patterns %q: %d of %d strings redacted: the corpus no longer tells redacted from kept", patterns, changed, 2*len(all))
		}
	}
}

func TestTextCacheBounded(t *testing.T) {
	r, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	r.counts = map[string]int{}
	for i := range 3 * maxTexts {
		if got, want := r.text(fmt.Sprintf("--token=%d", i)), "--token="+Redacted; got != want {
			t.Fatalf("text = %q, want %q", got, want)
		}
	}
	if len(r.texts) > maxTexts {
		t.Errorf("the cache holds %d strings, more than %d", len(r.texts), maxTexts)
	}
	if got := r.counts["credentials in arguments and values"]; got != 3*maxTexts {
		t.Errorf("counted %d credentials, want %d", got, 3*maxTexts)
	}
}

func TestMayHoldCredential(t *testing.T) {
	for _, s := range texts(rand.New(rand.NewPCG(3, 4)), 20000) {
		if (credential.MatchString(s) || credentialFlag.MatchString(s)) && !mayHoldCredential(s) {
			t.Errorf("mayHoldCredential(%q) = false, but the rules match it", s)
		}
	}
	// (?i) folds the Kelvin sign into k and the long s into s.
	for _, s := range []string{"ſecret=x", "to\u212aen: y", "api\u212aey=z", "paſſword=w", "--to\u212aen"} {
		if !credential.MatchString(s) && !credentialFlag.MatchString(s) {
			t.Errorf("the rules do not match %q: the test no longer tests folding", s)
		}
		if !mayHoldCredential(s) {
			t.Errorf("mayHoldCredential(%q) = false", s)
		}
	}
	for _, s := range []string{"Running", "alpine:3.20", "kube-api-access-x", "basi", "tokn", "api key", "pass word"} {
		if mayHoldCredential(s) {
			t.Errorf("mayHoldCredential(%q) = true: the prefilter lets every string through", s)
		}
	}
}

func TestIsEnvValuePath(t *testing.T) {
	paths := []string{
		"spec.containers[app].env[A].value", "spec.containers[app].env[A]", "spec.containers[app].env[].value",
		"env[A].value", ".env[A].value", "x.env[[A].value", "x.env[A]].value", "x.env[a[b].value", "x.env[a]b].value",
		"x.env[A].value.value", "x.env[A].valuex", "x.ENV[A].value", "x.env[\n].value", "x.env[\xff].value", "x.env[é].value",
		"spec.initContainers[i].env[DB_PASSWORD].value", "metadata.annotations[a.env[b].value]",
	}
	rng := rand.New(rand.NewPCG(5, 6))
	pieces := []string{".", "env", "e", "[", "]", "value", ".value", "A", "\n", "\xff", "é", ".env[", "].value"}
	for range 50000 {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		paths = append(paths, b.String())
	}
	matched := 0
	for _, p := range paths {
		want := refEnvValuePath.MatchString(p)
		if got := isEnvValuePath(p); got != want {
			t.Errorf("isEnvValuePath(%q) = %v, want %v", p, got, want)
		}
		if want {
			matched++
		}
	}
	if matched < 10 {
		t.Errorf("only %d paths are env values: the test no longer tests them", matched)
	}
}

// plainTexts hold no word a credential needs.
var plainTexts = []string{"", "Running", "alpine:3.20", "a/b", "<&>", "é", "x y", "--verbose", "[redacted]", "CUSTOMER", "acme-42", "1234"}

// realJSON are rendered values with env values, last-applied
// configurations, user keys and arguments, some spelled with escapes.
var realJSON = []string{
	`{"env":[{"name":"A","value":"b"}]}`, `{"name":"app","env":[{"name":"CUSTOMER","value":"acme"}]}`,
	`{"\u0065nv":[{"name":"A","value":"b"}]}`, `[{"name":"A","value":"b"}]`,
	`{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}}`,
	`{"annotations":{"kubectl.kubernetes.io\/last-applied-configuration":"{}"}}`,
	`{"labels":{"CUSTOMER":"acme"}}`, `{"labels":{"billing\/account":"4242"}}`, `{"annotations":{"billing/account":"4242"}}`,
	`{"args":["--to\u006ben","x"]}`, `["--token","x"]`, `["--verbose","x"]`, `{"image":"alpine:3.20"}`, `["a","b"]`, `{}`, `[]`,
}

// genJSON makes a rendered value: objects with the keys the rules look
// at, lists of arguments, strings from genText; escaped as encoding/json
// does, or with '/' as \/ and letters as \uXXXX.
func genJSON(rng *rand.Rand) string {
	var gen func(depth int) any
	keys := []string{"name", "value", "env", "args", "command", "annotations", "labels", lastApplied,
		"billing/account", "CUSTOMER", "image", "valueFrom", "password", "team", "x"}
	plain := rng.IntN(3) == 0 // no word a credential needs
	gen = func(depth int) any {
		switch n := rng.IntN(10); {
		case depth > 3 || n < 3:
			if plain {
				return plainTexts[rng.IntN(len(plainTexts))]
			}
			if rng.IntN(4) == 0 {
				return realTexts[rng.IntN(len(realTexts))]
			}
			return genText(rng)
		case n < 6:
			m := map[string]any{}
			for range rng.IntN(4) {
				m[keys[rng.IntN(len(keys))]] = gen(depth + 1)
			}
			return m
		case n < 9:
			var l []any
			for range rng.IntN(5) {
				if !plain && rng.IntN(3) == 0 {
					l = append(l, []string{"--password", "-token", "--api-key", "--verbose", "x"}[rng.IntN(5)])
				} else {
					l = append(l, gen(depth+1))
				}
			}
			return l
		default:
			return []any{1.5, true, nil}[rng.IntN(3)]
		}
	}
	if rng.IntN(8) == 0 {
		return realJSON[rng.IntN(len(realJSON))]
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(rng.IntN(2) == 0)
	enc.Encode(gen(0))
	s := strings.TrimSuffix(b.String(), "\n")
	switch rng.IntN(6) {
	case 0:
		s = strings.ReplaceAll(s, "/", `\/`)
	case 1:
		s = strings.ReplaceAll(s, `"env"`, `"\u0065nv"`)
	case 2:
		s = strings.ReplaceAll(s, "token", `\u0074oken`)
	case 3:
		s = s[:rng.IntN(len(s)+1)] // not JSON
	}
	return s
}

var changePaths = []string{
	"spec.containers[app]", "spec.containers[app].env", "spec.containers[app].env[DB_PASSWORD]",
	"spec.containers[app].env[LOG].value", "spec.containers[app].args", "spec.containers[app].command",
	"metadata.annotations", "metadata.annotations[" + lastApplied + "]", "metadata.annotations[billing/account]",
	"metadata.labels", "metadata.labels[CUSTOMER]", "metadata.labels[app]", "status.message", "status.phase",
	"spec.volumes[kube-api-access-x]", "status.containerStatuses[app].state",
}

// genLifecycle makes a lifecycle with n changes, events, admission changes
// and audit patches; the same rng state makes the same lifecycle.
func genLifecycle(rng *rand.Rand, n int) *diff.Lifecycle {
	val := func() string {
		switch rng.IntN(4) {
		case 0:
			return ""
		case 1:
			return genText(rng)
		default:
			return genJSON(rng)
		}
	}
	change := func() diff.Change {
		return diff.Change{Path: changePaths[rng.IntN(len(changePaths))], Op: diff.OpChange, Old: val(), New: val()}
	}
	lc := &diff.Lifecycle{Admission: &diff.Admission{}, Audit: &diff.Audit{}}
	for range n {
		var s diff.Step
		for range 1 + rng.IntN(4) {
			s.Changes = append(s.Changes, change())
		}
		lc.Steps = append(lc.Steps, s)
		lc.Events = append(lc.Events, diff.Event{Message: genText(rng)})
		lc.Admission.Changes = append(lc.Admission.Changes, diff.AdmissionChange{Change: change()})
		lc.Audit.Denied = append(lc.Audit.Denied, diff.DeniedRequests{Message: realTexts[rng.IntN(len(realTexts))]})
		p := diff.WebhookPatch{}
		for range 1 + rng.IntN(3) {
			path := []string{"/spec/containers/0/env/1/value", "/spec/containers/-", "/spec/containers/0/args/2",
				"/metadata/annotations", "/metadata/labels/CUSTOMER", "/spec/containers/0/command/-"}[rng.IntN(6)]
			v := genJSON(rng)
			if !json.Valid([]byte(v)) {
				v, _ := json.Marshal(v)
				p.Ops = append(p.Ops, diff.PatchOp{Op: "add", Path: path, Value: v})
				continue
			}
			p.Ops = append(p.Ops, diff.PatchOp{Op: "add", Path: path, Value: json.RawMessage(v)})
		}
		lc.Audit.Patches = append(lc.Audit.Patches, p)
	}
	return lc
}

func TestRedactMatchesReference(t *testing.T) {
	for _, patterns := range patternSets {
		r, err := New(patterns)
		if err != nil {
			t.Fatal(err)
		}
		ref := newRefRedactor(r)
		plain := 0
		for seed := range uint64(10) {
			lc := genLifecycle(rand.New(rand.NewPCG(seed, 7)), 40)
			want := genLifecycle(rand.New(rand.NewPCG(seed, 7)), 40)
			for _, s := range lc.Steps {
				for _, c := range s.Changes {
					for _, v := range []string{c.Old, c.New} {
						if strings.HasPrefix(v, "{") && r.plainJSON(v, contextKey(c.Path)) {
							plain++
						}
					}
				}
			}
			wantCounts := ref.Redact(want)
			gotCounts := r.Redact(&explain.Lifecycle{Lifecycle: lc}) // one Redactor for all, as podtrace report has
			if d := cmp.Diff(want, lc, cmpopts.IgnoreUnexported(diff.Lifecycle{}, diff.Change{})); d != "" {
				t.Fatalf("patterns %q, seed %d: lifecycle (-want +got):\n%s", patterns, seed, d)
			}
			if d := cmp.Diff(wantCounts, gotCounts); d != "" {
				t.Errorf("patterns %q, seed %d: counts (-want +got):\n%s", patterns, seed, d)
			}
			// Again, with what the Redactor cached from the first time.
			again := genLifecycle(rand.New(rand.NewPCG(seed, 7)), 40)
			againCounts := r.Redact(&explain.Lifecycle{Lifecycle: again})
			if d := cmp.Diff(want, again, cmpopts.IgnoreUnexported(diff.Lifecycle{}, diff.Change{})); d != "" {
				t.Fatalf("patterns %q, seed %d, second time: lifecycle (-want +got):\n%s", patterns, seed, d)
			}
			if d := cmp.Diff(wantCounts, againCounts); d != "" {
				t.Errorf("patterns %q, seed %d, second time: counts (-want +got):\n%s", patterns, seed, d)
			}
			if len(wantCounts) < 2 {
				t.Errorf("patterns %q, seed %d: only %v redacted: the lifecycle no longer tests the rules", patterns, seed, wantCounts)
			}
		}
		if len(patterns) == 0 && plain < 20 {
			t.Errorf("only %d JSON values skip decoding: the test no longer tests plainJSON", plain)
		}
	}
}

func TestRedactObjectMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	r, err := New([]string{"CUSTOMER"})
	if err != nil {
		t.Fatal(err)
	}
	ref := newRefRedactor(r)
	for range 2000 {
		raw := []byte(genJSON(rng))
		got, gotErr := r.RedactObject(raw)
		want, wantErr := ref.RedactObject(raw)
		if (gotErr == nil) != (wantErr == nil) || string(got) != string(want) {
			t.Fatalf("RedactObject(%s) = %s, %v; want %s, %v", raw, got, gotErr, want, wantErr)
		}
	}
	if d := cmp.Diff(ref.counts, r.Counts()); d != "" {
		t.Errorf("counts (-want +got):\n%s", d)
	}
}

// FuzzText holds text, the prefilter and isEnvValuePath to the regular
// expressions they stand for, and the prefilter and plainJSON to what they
// were before their Shift-And scans: go test ./diff -run '^$' -fuzz FuzzText.
func FuzzText(f *testing.F) {
	for _, s := range realTexts {
		f.Add(s)
	}
	r, err := New(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r.counts = map[string]int{}
		ref := newRefRedactor(r)
		if got, want := r.text(s), ref.text(s); got != want {
			t.Errorf("text(%q) = %q, want %q", s, got, want)
		}
		if d := cmp.Diff(ref.counts, r.counts); d != "" {
			t.Errorf("text(%q) counts (-want +got):\n%s", s, d)
		}
		if got, want := isEnvValuePath(s), refEnvValuePath.MatchString(s); got != want {
			t.Errorf("isEnvValuePath(%q) = %v, want %v", s, got, want)
		}
		if got, want := r.followsFlag(s), credentialFlag.MatchString(s); got != want {
			t.Errorf("followsFlag(%q) = %v, want %v", s, got, want)
		}
		if got, want := mayHoldCredential(s), refMayHoldCredential(s); got != want || got != oldMayHoldCredential(s) {
			t.Errorf("mayHoldCredential(%q) = %v, want %v", s, got, want)
		}
		for _, key := range []string{"", "env", "annotations"} {
			if got, want := r.plainJSON(s, key), r.oldPlainJSON(s, key); got != want {
				t.Errorf("plainJSON(%q, %q) = %v, want %v", s, key, got, want)
			}
		}
	})
}

// oldMayHoldCredential is mayHoldCredential as it was before its Shift-And
// scan: a switch on each byte's lower case and a comparison where a word may
// start.
func oldMayHoldCredential(s string) bool {
	folds := false // whether the Kelvin sign and the long s were looked for
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			if !folds && (strings.Contains(s[i:], "\u212a") || strings.Contains(s[i:], "\u017f")) {
				return true
			}
			folds = true
			continue
		}
		switch c | 0x20 {
		case 'p':
			if oldFoldedAt(s, i, "passw") {
				return true
			}
		case 's':
			if oldFoldedAt(s, i, "secret") {
				return true
			}
		case 't':
			if oldFoldedAt(s, i, "token") {
				return true
			}
		case 'a':
			if oldFoldedAt(s, i, "api") {
				j := i + 3
				if j < len(s) && (s[j] == '-' || s[j] == '_') {
					j++
				}
				if oldFoldedAt(s, j, "key") {
					return true
				}
			}
		case 'c':
			if oldFoldedAt(s, i, "credential") {
				return true
			}
		case 'b':
			if oldFoldedAt(s, i, "bearer") || oldFoldedAt(s, i, "basic") {
				return true
			}
		}
	}
	return false
}

func oldFoldedAt(s string, i int, word string) bool {
	if len(s)-i < len(word) {
		return false
	}
	for j := 0; j < len(word); j++ {
		c := s[i+j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != word[j] {
			return false
		}
	}
	return true
}

// refMayHoldCredential is what mayHoldCredential means, spelled plainly:
// the string, its ASCII capitals made small, holds a word, or the Kelvin
// sign or the long s is in it.
func refMayHoldCredential(s string) bool {
	lower := []byte(s)
	for i, c := range lower {
		if 'A' <= c && c <= 'Z' {
			lower[i] = c + 'a' - 'A'
		}
	}
	for _, w := range []string{"passw", "secret", "token", "apikey", "api-key", "api_key", "credential", "bearer", "basic", "\u212a", "\u017f"} {
		if strings.Contains(string(lower), w) {
			return true
		}
	}
	return false
}

// oldPlainJSON is plainJSON as it was before its one-pass scan.
func (r *Redactor) oldPlainJSON(v, key string) bool {
	if len(r.Patterns) > 0 || key == "env" ||
		strings.Contains(v, `"env"`) || strings.Contains(v, lastApplied) ||
		strings.Contains(v, `\u`) || strings.Contains(v, `\/`) ||
		oldMayHoldCredential(v) {
		return false
	}
	for k := range r.Keys {
		if strings.Contains(v, k) || !literalInJSON(k) {
			return false
		}
	}
	return true
}

// scanPieces make up strings for the scans: every word and what is one byte
// short of it or one byte off, in several cases, with the bytes around the
// ASCII letters that a careless fold would take for them ('@' is 'A'-1,
// '[' is 'Z'+1, '`' and '{' their lower case neighbours, 0xc1 and 0xe1
// 'A' and 'a' with the high bit), the Kelvin sign, the long s and pieces of
// their UTF-8, other non-ASCII characters, and the bytes of the JSON checks.
var scanPieces = []string{
	"passw", "PASSW", "pAsSw", "pass", "asswo", "passwd", "password", "secret", "SECRET", "secre", "ecret", "token", "ToKeN", "toke", "oken",
	"api", "API", "apikey", "api-key", "API_KEY", "api--key", "api key", "ap", "key", "KEY", "-", "_",
	"credential", "CREDENTIALS", "credentia", "redential", "bearer", "Bearer", "beare", "basic", "BASIC", "basi",
	"t", "o", "k", "e", "n", "p", "a", "s", "w", "c", "b", "i", "y", "r", "d", "l",
	"@", "[", "`", "{", "\xc1", "\xe1", "\xd0", "\xf0", "P" + "\x00", "\x7f",
	"\u212a", "\u017f", "\xe2", "\xe2\x84", "\x84\xaa", "\xaa", "\xc5", "\xbf", "\xc5\xc5\xbf", "\xe2\xe2\x84\xaa",
	"é", "日本", "\u212b", "\u017e", "\xff", "\x80",
	`"env"`, `"ENV"`, `"en`, `env"`, `\u`, `\/`, `\`, `\\`, `u`, `/`, `"`, "{", "}", "[", "]", ":", ",",
	"0", "9", "2026-11-02T06:01:07Z", "containerd://0123456789abcdef", " ", "\t", "\n", "=",
}

// genScanText makes a string of up to n pieces of scanPieces.
func genScanText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range rng.IntN(n + 1) {
		b.WriteString(scanPieces[rng.IntN(len(scanPieces))])
	}
	return b.String()
}

// scanTexts are the strings the scans are held to their references over:
// realTexts, generated texts and JSON, strings of scanPieces (some longer
// than the 64 bits of the scan's state), random bytes, and every string of
// up to three bytes from a set of the bytes that matter.
func scanTexts(rng *rand.Rand) []string {
	all := texts(rng, 20000)
	for range 5000 {
		all = append(all, genJSON(rng))
	}
	for range 50000 {
		all = append(all, genScanText(rng, 8))
	}
	for range 2000 {
		all = append(all, genScanText(rng, 60))
	}
	for range 20000 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		all = append(all, string(b))
	}
	small := []byte("pasKtokenyAPI-_\xe2\x84\xaa\xc5\xbf\\u/\"@[`{ 0")
	for _, a := range small {
		all = append(all, string([]byte{a}))
		for _, b := range small {
			all = append(all, string([]byte{a, b}))
			for _, c := range small {
				all = append(all, string([]byte{a, b, c}))
			}
		}
	}
	for _, w := range []string{"passw", "secret", "token", "apikey", "api-key", "api_key", "credential", "bearer", "basic", "\u212a", "\u017f"} {
		for _, pad := range []int{0, 1, 7, 58, 59, 63, 64, 65, 200} {
			x := strings.Repeat("x", pad)
			all = append(all, w, x+w, w+x, x+w+x, x+strings.ToUpper(w)+x, x+w[:len(w)-1], w[1:]+x)
		}
		// Long strings are scanned as two halves: the word at every
		// place around the middle and the ends, whole or cut short.
		for _, n := range []int{2*splitScan - 1, 2 * splitScan, 2*splitScan + 1, 2*splitScan + 2, 101, 300} {
			for at := range n - len(w) + 1 {
				if at > 3 && at < n/2-len(w)-2 || at > n/2+3 && at < n-len(w)-3 {
					continue
				}
				pre, post := strings.Repeat("-", at), strings.Repeat("é", n-len(w)-at)
				post = post[:n-len(w)-at] // é is two bytes: cut one off when need be
				all = append(all, pre+w+post, pre+w[:len(w)-1]+"x"+post, pre+"x"+w[1:]+post)
			}
		}
	}
	return all
}

// TestMayHoldCredentialMatchesReference holds the Shift-And scan to what it
// stands for and to the scan it replaced, over non-ASCII text, the Kelvin
// sign and the long s, and the bytes next to the ASCII letters.
func TestMayHoldCredentialMatchesReference(t *testing.T) {
	found := 0
	all := scanTexts(rand.New(rand.NewPCG(10, 11)))
	for _, s := range all {
		got, want, old := mayHoldCredential(s), refMayHoldCredential(s), oldMayHoldCredential(s)
		if got != want || got != old {
			t.Errorf("mayHoldCredential(%q) = %v, want %v (before: %v)", s, got, want, old)
		}
		if want {
			found++
		}
	}
	if found < len(all)/10 || found > len(all)-len(all)/10 {
		t.Errorf("%d of %d strings hold a word: the strings no longer test the scan", found, len(all))
	}
}

// TestPlainJSONMatchesReference holds plainJSON's one pass to the checks it
// replaced, for every key and the user's keys and patterns.
func TestPlainJSONMatchesReference(t *testing.T) {
	all := scanTexts(rand.New(rand.NewPCG(12, 13)))
	for range 20000 {
		all = append(all, genJSON(rand.New(rand.NewPCG(uint64(len(all)), 14))))
	}
	for _, patterns := range append(patternSets, []string{"a/b", "x\u212ay"}, []string{`"env"`}) {
		r, err := New(patterns)
		if err != nil {
			t.Fatal(err)
		}
		plain := 0
		for i, v := range all {
			key := []string{"", "env", "annotations", "labels", "args", "x"}[i%6]
			got, want := r.plainJSON(v, key), r.oldPlainJSON(v, key)
			if got != want {
				t.Fatalf("patterns %q: plainJSON(%q, %q) = %v, want %v", patterns, v, key, got, want)
			}
			if got {
				plain++
			}
		}
		if len(r.Patterns) == 0 && plain < len(all)/10 {
			t.Errorf("patterns %q: %d of %d values plain: the values no longer test plainJSON", patterns, plain, len(all))
		}
	}
}

// TestPathRule holds the rule change decides once a change to the checks
// it made for each value before, over paths of env values, last-applied
// annotations, the user's keys and others.
func TestPathRule(t *testing.T) {
	paths := append([]string{"", "]", "[", ".", "a]", "[]", "x[" + lastApplied + "]", lastApplied, "metadata.labels[CUSTOMER].value"}, changePaths...)
	rng := rand.New(rand.NewPCG(15, 16))
	pieces := []string{".", "env", "[", "]", "value", ".value", ".env[", "].value", "CUSTOMER", "[CUSTOMER]", "[billing/account]", "[redacted]",
		"metadata", "annotations", "labels", "[" + lastApplied + "]", lastApplied, "A", "é"}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(7) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		paths = append(paths, b.String())
	}
	for _, patterns := range patternSets {
		r, err := New(patterns)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, p := range paths {
			var wantRule, wantKey string
			switch {
			case refEnvValuePath.MatchString(p):
				wantRule = "env values"
			case strings.HasSuffix(p, "["+lastApplied+"]"):
				wantRule = "last-applied-configuration annotations"
			case r.keyPath(p):
				wantRule = "values of --redact keys"
			default:
				wantKey = contextKey(p)
			}
			if rule, key := r.pathRule(p); rule != wantRule || key != wantKey {
				t.Errorf("patterns %q: pathRule(%q) = %q, %q; want %q, %q", patterns, p, rule, key, wantRule, wantKey)
			}
			seen[wantRule]++
		}
		if seen["env values"] < 20 || seen["last-applied-configuration annotations"] < 20 || seen[""] < 20 ||
			len(r.Keys) > 0 && seen["values of --redact keys"] < 20 {
			t.Errorf("patterns %q: rules decided %v: the paths no longer test pathRule", patterns, seen)
		}
	}
}

func TestWordScan(t *testing.T) {
	var w wordScan
	a, b, q := w.add("ab-", true), w.add("Q", true), w.add("eN", false)
	c := w.addByte(func(c byte) bool { return c == 'z' || c == 'Z' })
	for s, want := range map[string]uint64{
		"": 0, "ab-": a, "AB-": a, "aB-x": a, "ab_": 0, "ab": 0, "a b-": 0, "q": b, "Q": b, "z": c, "Z": c, "xab-qz": a | b | c,
		"\xc1b-": 0, "\xe1b-": 0, "@b-": 0, "`b-": 0, "ab-ab-": a, "eN": q, "en": 0, "EN": 0, "En": 0, "eeNN": q,
	} {
		if got := w.find(s); got != want {
			t.Errorf("find(%q) = %b, want %b", s, got, want)
		}
	}
	if credentialScan.bits > 64 || jsonScan.bits != 64 {
		t.Errorf("the scans take %d and %d bits", credentialScan.bits, jsonScan.bits)
	}
	defer func() {
		if recover() == nil {
			t.Error("a wordScan took more than 64 bits")
		}
	}()
	w.add(strings.Repeat("x", 64-w.bits+1), false)
}

// TestValueCache redacts containers with env lists, as the replicas of
// Deployments have them, more of them than the cache holds, each several
// times: every time as the reference does, counts included.
func TestValueCache(t *testing.T) {
	r, err := New([]string{"CUSTOMER"})
	if err != nil {
		t.Fatal(err)
	}
	ref := newRefRedactor(r)
	var lc diff.Lifecycle
	for i := range maxValues + 100 {
		for range 3 {
			v := fmt.Sprintf(`{"name":"app","args":["--token","t%d"],"env":[{"name":"CUSTOMER","value":"c%d"},{"name":"B","valueFrom":{}}],"image":"app:%d"}`, i, i, i%7)
			// The same values under other keys: env values and user keys
			// only under env, and labels or annotations.
			lc.Steps = append(lc.Steps, diff.Step{Changes: []diff.Change{{Path: "spec.containers[app]", Op: diff.OpAdd, New: v},
				{Path: "spec.containers[app].env", Op: diff.OpChange, Old: `[{"name":"A","value":"a"}]`, New: `[{"name":"A","value":"b"}]`},
				{Path: "status.list", Op: diff.OpChange, Old: `[{"name":"A","value":"a"}]`, New: `[{"name":"A","value":"b"}]`},
				{Path: "metadata.labels", Op: diff.OpAdd, New: `{"CUSTOMER":"c"}`},
				{Path: "status.labelz", Op: diff.OpAdd, New: `{"CUSTOMER":"c"}`}}})
		}
	}
	want := diff.Lifecycle{Steps: make([]diff.Step, len(lc.Steps))}
	for i, s := range lc.Steps {
		want.Steps[i].Changes = append([]diff.Change(nil), s.Changes...)
	}
	wantCounts := ref.Redact(&want)
	gotCounts := r.Redact(&explain.Lifecycle{Lifecycle: &lc})
	if d := cmp.Diff(want, lc, cmpopts.IgnoreUnexported(diff.Lifecycle{}, diff.Change{})); d != "" {
		t.Fatalf("lifecycle (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantCounts, gotCounts); d != "" {
		t.Errorf("counts (-want +got):\n%s", d)
	}
	if len(r.values) == 0 || len(r.values) > maxValues {
		t.Errorf("the cache holds %d values, want 1 to %d", len(r.values), maxValues)
	}
	if got := wantCounts["env values"]; got != 3*(maxValues+100)*3 {
		t.Errorf("%d env values redacted: the test no longer tests the cache", got)
	}
}

func TestSummaryCountsOne(t *testing.T) {
	got := Summary(map[string]int{"env values": 1, "credentials in arguments and values": 2, "last-applied-configuration annotations": 1})
	want := "2 credentials in arguments and values, 1 env value, 1 last-applied-configuration annotation"
	if got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}

// TestRedactFindings: a finding quotes events and audit messages, which can
// carry a credential: its text goes through the same rules, and counts.
func TestRedactFindings(t *testing.T) {
	lc := &explain.Lifecycle{Lifecycle: &diff.Lifecycle{}, Findings: []explain.Finding{{
		ID:       "crash-loop",
		Headline: "container app is crash looping",
		Evidence: []explain.Evidence{{Text: "event Warning BackOff (x3): app exited: login failed with password=hunter2"}},
		Next:     []string{"check the client: curl -H 'Authorization: Bearer abc.def.ghi' ..."},
	}}}
	r, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	counts := r.Redact(lc)
	f := lc.Findings[0]
	for _, s := range []string{f.Evidence[0].Text, f.Next[0]} {
		if strings.Contains(s, "hunter2") || strings.Contains(s, "abc.def.ghi") {
			t.Errorf("not redacted: %q", s)
		}
	}
	if counts["credentials in arguments and values"] != 2 {
		t.Errorf("counts %v, want 2 credentials", counts)
	}
}
