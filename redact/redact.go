package redact

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
)

// Redacted replaces a value that a ticket should not carry.
const Redacted = "[redacted]"

// Redactor removes from a lifecycle what should not leave the cluster in a
// report: env values (valueFrom references stay), arguments and commands
// that carry credentials, the last-applied-configuration annotation, and
// whatever the user's patterns name. Structure stays: a redacted field is
// still shown as changed, with its value replaced by Redacted. A Redactor
// is not safe for concurrent use: it counts, and caches what it matched.
type Redactor struct {
	// Keys are env var names, annotation or label keys whose values are
	// redacted, compared exactly.
	Keys map[string]bool
	// Patterns redact the parts of any value they match.
	Patterns []*regexp.Regexp

	counts map[string]int
	// texts caches what text made of a string that went through a
	// regular expression, with how many matches it counted: values repeat
	// from revision to revision and pod to pod.
	texts map[string]redactedText
	// values caches what jsonValue made of a JSON value it decoded.
	values map[valueKey]redactedValue
}

// redactedText is text's result for one string: the string to show and
// the matches counted by each rule.
type redactedText struct {
	out           string
	credentials   int
	patternsFound int
}

// maxTexts bounds the cache of text's results; it is emptied when full.
const maxTexts = 4096

// valueKey is a JSON value and the key it is walked under.
type valueKey struct{ v, key string }

// redactedValue is jsonValue's result for one valueKey: the string to
// show and what its walk counted, by rule.
type redactedValue struct {
	out    string
	counts []ruleCount
}

type ruleCount struct {
	rule string
	n    int
}

// maxValues bounds the cache of jsonValue's results; it is emptied when
// full.
const maxValues = 1024

// lastApplied is the annotation kubectl apply keeps the whole object in.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// secretWord is in the names of settings that carry a secret.
const secretWord = `[a-z0-9_.-]*(?:password|passwd|secret|token|api[-_]?key|credentials?)[a-z0-9_.-]*`

var (
	// credential matches a setting with its value in one string:
	// --password=x, DB_TOKEN: x, or a flag and its value: --token x.
	credential = regexp.MustCompile(`(?i)((?:` + secretWord + `\s*[=:]\s*)|(?:(?:^|\s)--?` + secretWord + `\s+)|(?:\b(?:bearer|basic)\s+))("[^"]*"|'[^']*'|[^\s"',]+)`)
	// credentialFlag is a flag whose value is the next argument.
	credentialFlag = regexp.MustCompile(`(?i)^--?` + secretWord + `$`)
)

// New returns a Redactor with the default rules and the user's
// patterns: a pattern that is a plain key (letters, digits, -_./) names an
// env var, annotation or label; anything else is a regular expression.
func New(patterns []string) (*Redactor, error) {
	r := &Redactor{Keys: map[string]bool{}}
	plainKey := regexp.MustCompile(`^[A-Za-z0-9_./-]+$`)
	for _, p := range patterns {
		if plainKey.MatchString(p) {
			r.Keys[p] = true
			continue
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("--redact %q: not a key and not a regular expression: %w", p, err)
		}
		r.Patterns = append(r.Patterns, re)
	}
	return r, nil
}

// Clone returns a Redactor of the same rules with none of r's state: a
// Redactor keeps counts and a cache while it redacts, so each goroutine
// needs its own.
func (r *Redactor) Clone() *Redactor {
	return &Redactor{Keys: r.Keys, Patterns: r.Patterns}
}

// Redact rewrites the lifecycle's change values, messages and findings'
// text in place and returns how many values each rule redacted.
func (r *Redactor) Redact(x *explain.Lifecycle) map[string]int {
	r.counts = map[string]int{}
	lc := x.Lifecycle
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
	// The findings quote events, audit messages and values: their text
	// goes through the same rules.
	for i := range x.Findings {
		f := &x.Findings[i]
		f.Headline = r.text(f.Headline)
		for j := range f.Evidence {
			f.Evidence[j].Text = r.text(f.Evidence[j].Text)
		}
		for j := range f.Next {
			f.Next[j] = r.text(f.Next[j])
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
func (r *Redactor) patchOp(op *diff.PatchOp) {
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
func (r *Redactor) RedactObject(raw []byte) ([]byte, error) {
	if r.counts == nil {
		r.counts = map[string]int{}
	}
	if json.Valid(raw) && r.plainJSON(string(raw), "") {
		// Nothing a rule needs is in it (most objects' metadata, which a
		// Table row of serve carries): not decoded.
		return raw, nil
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

// Counts returns what the Redactor redacted so far, by rule.
func (r *Redactor) Counts() map[string]int { return r.counts }

// Summary says what was redacted, for the output's reader.
func Summary(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		noun := k
		if one, ok := singular[k]; ok && counts[k] == 1 {
			noun = one
		}
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], noun))
	}
	return strings.Join(parts, ", ")
}

// singular names the rules' counts of one: "1 env value".
var singular = map[string]string{
	"env values":                             "env value",
	"last-applied-configuration annotations": "last-applied-configuration annotation",
	"values of --redact keys":                "value of a --redact key",
	"credentials in arguments and values":    "credential in arguments and values",
	"matches of --redact patterns":           "match of a --redact pattern",
}

// isEnvValuePath reports whether path is an env var's value,
// spec.containers[app].env[NAME].value: whether it ends in
// .env[NAME].value with a NAME of at least one byte and no ']'.
func isEnvValuePath(path string) bool {
	rest, ok := strings.CutSuffix(path, "].value")
	if !ok {
		return false
	}
	// NAME runs from after one of the '[' after the last ']' to the end.
	last := strings.LastIndexByte(rest, ']')
	for i := len(rest) - 2; i > last; i-- {
		if rest[i] == '[' && strings.HasSuffix(rest[:i], ".env") {
			return true
		}
	}
	return false
}

func (r *Redactor) change(c *diff.Change) {
	if c.Old == "" && c.New == "" {
		return
	}
	rule, key := r.pathRule(c.Path)
	for _, v := range []*string{&c.Old, &c.New} {
		if *v == "" {
			continue
		}
		if rule != "" {
			*v = r.mark(rule)
		} else {
			*v = r.value(*v, key)
		}
	}
}

// pathRule says how change redacts the values of a change at path: each of
// them whole under rule, when rule is not "", or else what value finds in
// it under key. It depends on the path alone, and is decided once a change.
func (r *Redactor) pathRule(path string) (rule, key string) {
	switch {
	case isEnvValuePath(path):
		return "env values", ""
	case strings.HasSuffix(path, "["+lastApplied+"]"):
		return "last-applied-configuration annotations", ""
	case r.keyPath(path):
		return "values of --redact keys", ""
	}
	return "", contextKey(path)
}

// keyPath reports whether the path ends at an env var, annotation or label
// named by the user.
func (r *Redactor) keyPath(path string) bool {
	if len(r.Keys) == 0 || !strings.HasSuffix(path, "]") {
		return false
	}
	trimmed := strings.TrimSuffix(path, ".value")
	i := strings.LastIndex(trimmed, "[")
	return i >= 0 && r.Keys[strings.TrimSuffix(trimmed[i+1:], "]")]
}

func (r *Redactor) total() int {
	n := 0
	for _, c := range r.counts {
		n += c
	}
	return n
}

func (r *Redactor) mark(rule string) string {
	r.counts[rule]++
	return Redacted
}

// value redacts inside one rendered value: JSON objects and lists are walked
// (env values, last-applied annotations, user keys), strings are matched
// against the credential rule and the user's patterns.
func (r *Redactor) value(v, key string) string {
	if strings.HasPrefix(v, "{") || strings.HasPrefix(v, "[") {
		if r.plainJSON(v, key) {
			return v
		}
		if out, ok := r.jsonValue(v, key); ok {
			return out
		}
	}
	return r.text(v)
}

// jsonValue redacts a JSON value under key by walking it decoded, and
// counts what it redacted; ok is false when v is not JSON or the walked
// value could not be encoded. A value with something to redact is most
// often a container with an env list, the same for every replica of a
// Deployment: what it made of one is cached, with its counts.
func (r *Redactor) jsonValue(v, key string) (out string, ok bool) {
	k := valueKey{v, key}
	if c, hit := r.values[k]; hit {
		for _, n := range c.counts {
			r.counts[n.rule] += n.n
		}
		return c.out, true
	}
	counts := r.counts
	r.counts = map[string]int{} // what this walk counts, to cache
	out, ok = r.walkJSON(v, key)
	walked := r.counts
	r.counts = counts
	c := redactedValue{out: out}
	for rule, n := range walked {
		counts[rule] += n
		c.counts = append(c.counts, ruleCount{rule, n})
	}
	if ok {
		if r.values == nil || len(r.values) >= maxValues {
			r.values = make(map[valueKey]redactedValue)
		}
		r.values[k] = c
	}
	return out, ok
}

// walkJSON is jsonValue without the cache.
func (r *Redactor) walkJSON(v, key string) (string, bool) {
	var x any
	if json.Unmarshal([]byte(v), &x) != nil {
		return "", false
	}
	before := r.total()
	x = r.walk(x, key)
	if r.total() == before {
		return v, true // nothing redacted: keep the value as rendered
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(x) != nil {
		return "", false
	}
	return strings.TrimSuffix(b.String(), "\n"), true
}

// plainJSON reports whether walking v, JSON or not, under key would
// redact nothing, without decoding it: no user pattern, no env or
// last-applied-configuration or user key in it, no word a credential
// needs. JSON may spell any character \uXXXX and '/' as \/: v with either
// escape is decoded to be sure, and so is any v when a user key holds a
// byte JSON spells otherwise.
func (r *Redactor) plainJSON(v, key string) bool {
	if len(r.Patterns) > 0 || key == "env" {
		return false
	}
	// One pass finds the words a credential needs, "env", and whether v
	// has a backslash or a byte of a non-ASCII character; only then are the
	// escapes, the Kelvin sign and the long s looked for.
	found := jsonScan.find(v)
	if found&(jsonCredential|jsonEnv) != 0 ||
		found&jsonBackslash != 0 && (strings.Contains(v, `\u`) || strings.Contains(v, `\/`)) ||
		found&jsonNonASCII != 0 && (strings.Contains(v, "\u212a") || strings.Contains(v, "\u017f")) ||
		strings.Contains(v, lastApplied) {
		return false
	}
	if len(r.Keys) > 0 {
		for k := range r.Keys {
			if strings.Contains(v, k) || !literalInJSON(k) {
				return false
			}
		}
	}
	return true
}

// literalInJSON reports whether a JSON string holding s spells s as is,
// but for a '/' as \/ or an escape \uXXXX.
func literalInJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func (r *Redactor) walk(x any, key string) any {
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

func (r *Redactor) followsFlag(prev any) bool {
	s, ok := prev.(string)
	return ok && strings.HasPrefix(s, "-") && mayHoldCredential(s) && credentialFlag.MatchString(s)
}

// contextKey is the name of the field a path ends in, without a list or map
// key: "env" for spec.containers[a].env[B], "annotations" for
// metadata.annotations.
func contextKey(path string) string {
	if strings.HasSuffix(path, "]") {
		if i := strings.LastIndex(path, "["); i >= 0 {
			path = path[:i]
		}
	}
	return path[strings.LastIndex(path, ".")+1:]
}

// text redacts credentials and user patterns inside a string. Only a
// string that may hold a credential, or any string when the user gave
// patterns, goes through the regular expressions, and each distinct one
// only once while it stays in the cache.
func (r *Redactor) text(s string) string {
	if len(r.Patterns) == 0 && !mayHoldCredential(s) {
		return s
	}
	t, ok := r.texts[s]
	if !ok {
		t = r.matchText(s)
		if r.texts == nil || len(r.texts) >= maxTexts {
			r.texts = make(map[string]redactedText)
		}
		r.texts[s] = t
	}
	if t.credentials > 0 {
		r.counts["credentials in arguments and values"] += t.credentials
	}
	if t.patternsFound > 0 {
		r.counts["matches of --redact patterns"] += t.patternsFound
	}
	return t.out
}

// matchText runs the credential rule and the user's patterns over s.
func (r *Redactor) matchText(s string) redactedText {
	var t redactedText
	t.out = s
	if mayHoldCredential(s) {
		t.out = credential.ReplaceAllStringFunc(s, func(m string) string {
			sub := credential.FindStringSubmatch(m)
			t.credentials++
			return sub[1] + Redacted
		})
	}
	for _, re := range r.Patterns {
		t.out = re.ReplaceAllStringFunc(t.out, func(string) string {
			t.patternsFound++
			return Redacted
		})
	}
	return t
}

// mayHoldCredential reports whether s may match credential or
// credentialFlag: whether it holds, in any case, one of the words those
// rules need (password, passwd, secret, token, api key, credential, bearer,
// basic). It answers true, to be safe, for a string with the Kelvin sign or
// the long s, which (?i) folds to k and s.
//
// It runs a Shift-And automaton of those words over s (wordScan): a table
// load and three operations a byte, and no branch that depends on the byte.
func mayHoldCredential(s string) bool {
	return credentialScan.find(s) != 0
}

// credentialWords are the words of secretWord and of credential's bearer
// and basic (api[-_]?key spelled out), lower case: a string that holds none
// of them, in any ASCII case, matches neither credential nor
// credentialFlag, but for the Kelvin sign and the long s.
var credentialWords = []string{"passw", "secret", "token", "apikey", "api-key", "api_key",
	"credential", "bearer", "basic"}

var (
	// credentialScan finds credentialWords, the Kelvin sign and the long s.
	credentialScan wordScan
	// jsonScan finds, for plainJSON, credentialWords (their last bits are
	// jsonCredential), "env" with its quotes (jsonEnv), a backslash
	// (jsonBackslash) and any byte of a non-ASCII character (jsonNonASCII).
	jsonScan                                             wordScan
	jsonCredential, jsonEnv, jsonBackslash, jsonNonASCII uint64
)

func init() {
	for _, w := range credentialWords {
		credentialScan.add(w, true)
	}
	credentialScan.add("\u212a", false)
	credentialScan.add("\u017f", false)

	for _, w := range credentialWords {
		jsonCredential |= jsonScan.add(w, true)
	}
	jsonEnv = jsonScan.add(`"env"`, false)
	jsonBackslash = jsonScan.add(`\`, false)
	jsonNonASCII = jsonScan.addByte(func(c byte) bool { return c >= 0x80 })
}

// wordScan finds which of a set of words a string holds (with their ASCII
// letters in either case, for the words added so), by the Shift-And
// method: the words lie side by side in the bits
// of a uint64, and after each byte of the string, bit start+j of the state
// is set when the bytes up to it end with the first j+1 bytes of the word
// whose first bit is start.
type wordScan struct {
	masks   [256]uint64 // for each byte, the bits of the word positions it fills
	first   uint64      // the first bit of each word
	last    uint64      // the last bit of each word
	bits    int         // how many bits the words take
	longest int         // the length of the longest word
}

// add adds a word: with fold, its ASCII letters match either case, and
// its other bytes only themselves. It returns the word's last bit. The
// words of a wordScan take one bit a byte, and 64 at most.
func (t *wordScan) add(w string, fold bool) uint64 {
	if w == "" || t.bits+len(w) > 64 {
		panic("diff: the words of a wordScan do not fit in 64 bits")
	}
	t.first |= 1 << t.bits
	for j := 0; j < len(w); j++ {
		c := w[j]
		bit := uint64(1) << (t.bits + j)
		t.masks[c] |= bit
		if fold && ('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			t.masks[c^0x20] |= bit
		}
	}
	t.bits += len(w)
	t.longest = max(t.longest, len(w))
	last := uint64(1) << (t.bits - 1)
	t.last |= last
	return last
}

// addByte adds a word of one byte, any byte match accepts, and returns its
// bit.
func (t *wordScan) addByte(match func(c byte) bool) uint64 {
	if t.bits >= 64 {
		panic("diff: the words of a wordScan do not fit in 64 bits")
	}
	bit := uint64(1) << t.bits
	for c := range 256 {
		if match(byte(c)) {
			t.masks[c] |= bit
		}
	}
	t.first |= bit
	t.last |= bit
	t.bits++
	t.longest = max(t.longest, 1)
	return bit
}

// find returns the last bits of the words s holds, 0 when it holds none.
func (t *wordScan) find(s string) uint64 {
	var d, seen uint64
	first := t.first
	if len(s) >= 2*splitScan && t.longest <= splitScan {
		// Each byte's step waits for the one before: a long string is
		// scanned as two halves side by side, the first running on by the
		// longest word's length but one, for the words that start in it and
		// end in the second.
		a, b := s[:len(s)/2+t.longest-1], s[len(s)/2:]
		var e uint64
		i := 0
		for ; i < len(a) && i < len(b); i++ {
			d = (d<<1 | first) & t.masks[a[i]]
			e = (e<<1 | first) & t.masks[b[i]]
			seen |= d | e
		}
		for ; i < len(a); i++ {
			d = (d<<1 | first) & t.masks[a[i]]
			seen |= d
		}
		for ; i < len(b); i++ {
			e = (e<<1 | first) & t.masks[b[i]]
			seen |= e
		}
		return seen & t.last
	}
	for i := 0; i < len(s); i++ {
		d = (d<<1 | first) & t.masks[s[i]]
		seen |= d
	}
	return seen & t.last
}

// splitScan is the shortest half of a string find scans as two halves:
// shorter ones would gain less than the split costs. A word longer than it
// may not fit in the first half's overrun: find does not split for it.
const splitScan = 32
