package digester

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Digest returns the fake digest of an image reference: "sha256:" and the
// hex sha256 of the reference, with the implicit tag "latest" made explicit.
// There is no registry to ask, so the same reference always gets the same
// digest.
func Digest(image string) string {
	repo, tag := splitTag(image)
	if tag == "" {
		tag = "latest"
	}
	sum := sha256.Sum256([]byte(repo + ":" + tag))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Pin returns image pinned to its digest, "repo@sha256:...", dropping the
// tag, and true; or image unchanged and false if it is empty or already
// pinned by digest.
func Pin(image string) (string, bool) {
	if image == "" || strings.Contains(image, "@") {
		return image, false
	}
	repo, _ := splitTag(image)
	return repo + "@" + Digest(image), true
}

// splitTag splits "host:port/repo:tag" into "host:port/repo" and "tag". The
// tag is whatever follows the last colon after the last slash.
func splitTag(image string) (repo, tag string) {
	colon := strings.LastIndex(image, ":")
	if colon > strings.LastIndex(image, "/") {
		return image[:colon], image[colon+1:]
	}
	return image, ""
}
