package report

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestAppendJSONString holds appendJSONString to what json.Marshal writes
// of a string: every byte alone and among others, invalid and unusual
// UTF-8, and random strings of the bytes that matter.
func TestAppendJSONString(t *testing.T) {
	var cases []string
	for c := range 256 {
		cases = append(cases, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"z")
	}
	cases = append(cases, "", "plain", `"quoted"`, `back\slash\`, `\\"`, "<script>&amp;</script>", "tab\tnew\nline\r",
		"\u2028\u2029\u2027\u202a", "héllo wörld ✓ 日本", "\xff\xfe", "a\xc3", "\xe2\x80", "\xed\xa0\x80", "\uFFFD", "\x7f\x00\x1f",
		strings.Repeat(`{"a":"b\\c"}`, 50))
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("a\"\\<>&\x00\x1f\x7f\x80\xc3\xa9\xe2\x80\xa8\xff ")
	for range 5000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got := appendJSONString([]byte("x"), s)
		if string(got) != "x"+string(want) {
			t.Fatalf("appendJSONString(%q) = %s, json.Marshal: %s", s, got[1:], want)
		}
	}
}
