// Package krew checks podtrace's krew plugin manifest (deploy/krew) with
// krew's own tools, built from the Go module proxy in this module of its own
// (sigs.k8s.io/krew pins dependencies the main module should not carry).
package krew

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"text/template"
)

const (
	root     = "../.."
	manifest = root + "/deploy/krew/podtrace.yaml"
	tag      = "v0.0.0-krewtest"
)

// goBuild builds pkg into dir (in module dir) and returns the binary's path.
func goBuild(t *testing.T, module, pkg, out string) string {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = module
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// archive writes a release archive of the plugin: kubectl-podtrace (the
// podtrace binary under the name kubectl runs plugins by) at its top.
func archive(t *testing.T, binary, path string) {
	t.Helper()
	bin, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: "kubectl-podtrace", Mode: 0o755, Size: int64(len(bin)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(bin); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// render renders the manifest as krew-release-bot does at a release tag:
// addURIAndSha renders its URL with the tag and adds the sha256 of that
// archive (a map from the URL's file name here, the release's archives
// there), indent moves the lines it returns under the template's line.
func render(t *testing.T, shas map[string]string) []byte {
	t.Helper()
	funcs := template.FuncMap{
		"addURIAndSha": func(url, tag string) (string, error) {
			var u bytes.Buffer
			ut, err := template.New("url").Parse(url)
			if err != nil {
				return "", err
			}
			if err := ut.Execute(&u, struct{ TagName string }{tag}); err != nil {
				return "", err
			}
			sum, ok := shas[filepath.Base(u.String())]
			if !ok {
				return "", fmt.Errorf("no archive %s", filepath.Base(u.String()))
			}
			return "uri: " + u.String() + "\n    sha256: " + sum, nil
		},
		"indent": func(spaces int, v string) string {
			v = strings.ReplaceAll(v, "    sha256:", "sha256:")
			pad := strings.Repeat(" ", spaces)
			return strings.TrimSpace(pad + strings.ReplaceAll(v, "\n", "\n"+pad))
		},
	}
	tmpl, err := template.New(filepath.Base(manifest)).Funcs(funcs).ParseFiles(manifest)
	if err != nil {
		t.Fatalf("parse %s: %v", manifest, err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, struct{ TagName string }{tag}); err != nil {
		t.Fatalf("render %s: %v", manifest, err)
	}
	return out.Bytes()
}

// TestManifest renders the manifest for an archive of this podtrace, has
// krew's validate-krew-manifest check it (its schema: apiVersion, kind,
// name, descriptions, version, each platform's uri, sha256, bin and
// selector, every platform used once), then installs it with krew itself
// from the archive, and runs the plugin through kubectl.
func TestManifest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds podtrace and krew; skipped with -short")
	}
	dir := t.TempDir()
	host := runtime.GOOS + "_" + runtime.GOARCH
	plugin := goBuild(t, root, "./cmd/podtrace", filepath.Join(dir, "build", "kubectl-podtrace"))
	hostArchive := filepath.Join(dir, "kubectl-podtrace_"+tag+"_"+host+".tar.gz")
	archive(t, plugin, hostArchive)
	b, err := os.ReadFile(hostArchive)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	hostSha := hex.EncodeToString(sum[:])

	// The other platforms' archives are not built here: their sha256 is
	// the host's, which has the form validation checks; krew installs the
	// host's alone, from its archive, checking its sha256 for real.
	raw, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	shas := map[string]string{}
	for _, m := range regexp.MustCompile(`kubectl-podtrace_\{\{ \.TagName \}\}_(\w+)\.tar\.gz`).FindAllStringSubmatch(string(raw), -1) {
		shas["kubectl-podtrace_"+tag+"_"+m[1]+".tar.gz"] = hostSha
	}
	if _, ok := shas[filepath.Base(hostArchive)]; !ok {
		t.Skipf("the manifest has no archive for %s", host)
	}
	rendered := render(t, shas)
	// validate-krew-manifest names the plugin after the file.
	renderedPath := filepath.Join(dir, "podtrace.yaml")
	if err := os.WriteFile(renderedPath, rendered, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("rendered manifest:\n%s", rendered)

	tools := filepath.Join(dir, "tools")
	validate := goBuild(t, ".", "sigs.k8s.io/krew/cmd/validate-krew-manifest", filepath.Join(tools, "validate-krew-manifest"))
	out, err := exec.Command(validate, "-manifest", renderedPath, "-skip-install").CombinedOutput()
	if err != nil {
		t.Fatalf("validate-krew-manifest: %v\n%s", err, out)
	}
	t.Logf("validate-krew-manifest:\n%s", out)

	// An error the validator must find: a platform without its binary.
	broken := filepath.Join(dir, "broken", "podtrace.yaml")
	os.MkdirAll(filepath.Dir(broken), 0o755)
	os.WriteFile(broken, bytes.Replace(rendered, []byte("bin: kubectl-podtrace"), nil, 1), 0o644)
	if out, err := exec.Command(validate, "-manifest", broken, "-skip-install").CombinedOutput(); err == nil {
		t.Errorf("validate-krew-manifest accepted a platform without bin:\n%s", out)
	}

	krew := goBuild(t, ".", "sigs.k8s.io/krew/cmd/krew", filepath.Join(tools, "kubectl-krew"))
	krewRoot := filepath.Join(dir, "krew")
	install := exec.Command(krew, "install", "--manifest", renderedPath, "--archive", hostArchive)
	install.Env = append(os.Environ(), "KREW_ROOT="+krewRoot)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("krew install --manifest --archive: %v\n%s", err, out)
	}
	installed := filepath.Join(krewRoot, "bin", "kubectl-podtrace")
	if _, err := os.Stat(installed); err != nil {
		t.Fatalf("krew installed no kubectl-podtrace in %s: %v", filepath.Dir(installed), err)
	}

	// kubectl finds the plugin on PATH, and the plugin says its name.
	kubectl := os.Getenv("PODTRACE_KUBECTL")
	if kubectl == "" {
		if bin := os.Getenv("PODTRACE_CLUSTER_BIN"); bin != "" {
			kubectl = filepath.Join(bin, "kubectl")
		} else {
			kubectl = filepath.Join(root, "_output", "bin", "kubectl")
		}
	}
	if _, err := os.Stat(kubectl); err != nil {
		t.Logf("no kubectl at %s (make kubectl): the plugin is installed, not run through kubectl", kubectl)
		return
	}
	run := exec.Command(kubectl, "podtrace", "version")
	run.Env = append(os.Environ(), "PATH="+filepath.Dir(installed)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err = run.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "kubectl podtrace version ") {
		t.Errorf("kubectl podtrace version: %v\n%s\nwant the plugin to name itself kubectl podtrace", err, out)
	}
	run = exec.Command(kubectl, "podtrace", "diff", "x", "--nosuch")
	run.Env = append(os.Environ(), "PATH="+filepath.Dir(installed)+string(os.PathListSeparator)+os.Getenv("PATH"))
	if out, _ := run.CombinedOutput(); !strings.Contains(string(out), "see kubectl podtrace diff --help") {
		t.Errorf("kubectl podtrace diff x --nosuch:\n%s\nwant the error to name kubectl podtrace", out)
	}
	t.Logf("kubectl podtrace version: %s", out)
}
