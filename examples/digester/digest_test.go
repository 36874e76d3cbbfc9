package digester

import "testing"

func TestPin(t *testing.T) {
	// Expected digests computed outside Go: printf 'REF' | sha256sum.
	tests := []struct {
		image, want string
		changed     bool
	}{
		{"alpine:3.20", "alpine@sha256:d3dfed77bb64d7d29a735783a2a90e9a1979dacbe1b8dead996d9ebc78544336", true},
		{"registry.example.com/runner-helper:x86_64-v17.0.0", "registry.example.com/runner-helper@sha256:2b2b715167120d2846979597f82d59d672d8bd6588374144c04eb2602e2f00ae", true},
		// A port is not a tag; no tag means latest.
		{"registry.example.com:5000/team/app", "registry.example.com:5000/team/app@sha256:22c71edcd9e266aef6d06b83dc29baad0c9666945058b7620a04cfddc292d703", true},
		{"registry.example.com:5000/team/app:latest", "registry.example.com:5000/team/app@sha256:22c71edcd9e266aef6d06b83dc29baad0c9666945058b7620a04cfddc292d703", true},
		{"alpine@sha256:0000000000000000000000000000000000000000000000000000000000000000", "alpine@sha256:0000000000000000000000000000000000000000000000000000000000000000", false},
		{"alpine:3.20@sha256:0000000000000000000000000000000000000000000000000000000000000000", "alpine:3.20@sha256:0000000000000000000000000000000000000000000000000000000000000000", false},
		{"", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			got, changed := Pin(tt.image)
			if got != tt.want || changed != tt.changed {
				t.Errorf("Pin(%q) = %q, %t; want %q, %t", tt.image, got, changed, tt.want, tt.changed)
			}
		})
	}
}
