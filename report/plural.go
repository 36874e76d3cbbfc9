package report

import (
	"strconv"
	"strings"
)

// Plural writes n things, the noun in the singular for one: "1 pod",
// "2 pods", "0 pods", "3 entries", "2 patches". Every output counts with
// it: text, markdown, HTML and the commands' summaries.
func Plural[N integer](n N, noun string) string {
	return strconv.FormatInt(int64(n), 10) + " " + PluralNoun(n, noun)
}

// integer is what Plural counts with.
type integer interface {
	~int | ~int32 | ~int64 | ~uint | ~uint32 | ~uint64
}

// PluralNoun is the noun of Plural alone: "pod" for 1, else "pods".
func PluralNoun[N integer](n N, noun string) string {
	if n == 1 || noun == "" {
		return noun
	}
	switch {
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		return noun + "es"
	case strings.HasSuffix(noun, "y") && len(noun) > 1 && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		return noun[:len(noun)-1] + "ies"
	}
	return noun + "s"
}
