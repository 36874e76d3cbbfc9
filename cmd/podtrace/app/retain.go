package app

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// parseRetain parses a retention like Go's durations, with days too: "7d",
// "36h", "1d12h", "90m". Zero is not a retention.
func parseRetain(s string) (time.Duration, error) {
	const accepted = `want a duration like 7d, 36h, 1d12h or 90m (units d, h, m, s)`
	m := daysRE.FindStringSubmatch(s)
	if m == nil {
		return 0, errors.New(accepted)
	}
	var d time.Duration
	if m[1] != "" {
		days, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || days > math.MaxInt64/int64(24*time.Hour) {
			return 0, errors.New(accepted)
		}
		d = time.Duration(days) * 24 * time.Hour
	}
	if m[2] != "" {
		rest, err := time.ParseDuration(m[2])
		if err != nil || rest < 0 {
			return 0, errors.New(accepted)
		}
		d += rest
	}
	if d <= 0 {
		return 0, fmt.Errorf("it must be more than 0; %s", accepted)
	}
	return d, nil
}

// daysRE splits "1d12h" into days and the rest, which time.ParseDuration
// reads.
var daysRE = regexp.MustCompile(`^(?:(\d+)d)?((?:\d+(?:\.\d+)?(?:h|m|s|ms))*)$`)

// parseSize parses a size in bytes: "10GiB", "500MiB", "2G", "1.5TiB",
// "1048576". Binary units (KiB, MiB, GiB, TiB, and Kubernetes' Ki, Mi,
// Gi, Ti) are powers of 1024, decimal ones (kB, KB, MB, GB, TB, and
// k, K, M, G, T) powers of 1000.
func parseSize(s string) (int64, error) {
	const accepted = `want a size like 10GiB, 500MiB or 2G (units B, KiB, MiB, GiB, TiB or Ki, Mi, Gi, Ti: powers of 1024; kB, MB, GB, TB or k, M, G, T: powers of 1000)`
	m := sizeRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, errors.New(accepted)
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, errors.New(accepted)
	}
	mult, ok := sizeUnits[m[2]]
	if !ok {
		return 0, errors.New(accepted)
	}
	v := n * float64(mult)
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("it is too large; %s", accepted)
	}
	if v < 1 {
		return 0, fmt.Errorf("it must be more than 0; %s", accepted)
	}
	return int64(v), nil
}

var sizeRE = regexp.MustCompile(`^(\d+(?:\.\d+)?)\s*([A-Za-z]*)$`)

var sizeUnits = map[string]int64{
	"": 1, "B": 1,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
	"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
	"kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
	"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
}
