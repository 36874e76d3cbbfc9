package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImage builds podtrace as `make image` does, packages it, reads the OCI
// layout and the tarball back, and runs the binary found in the layer.
func TestImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "podtrace")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X github.com/podtrace/podtrace/cmd/podtrace/app.Version=v0.0.0-imagetest", "-o", bin, "./cmd/podtrace")
	build.Dir = filepath.Join("..", "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	img, err := Build(Options{Binary: bin, Ref: "podtrace:test", Arch: "amd64", Created: time.Unix(0, 0).UTC()})
	if err != nil {
		t.Fatal(err)
	}
	oci, tarPath := filepath.Join(dir, "oci"), filepath.Join(dir, "podtrace.tar")
	if err := Write(img, "podtrace:test", oci, tarPath); err != nil {
		t.Fatal(err)
	}

	// The layout, read back.
	idx, err := layout.ImageIndexFromPath(oci)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "podtrace:test" {
		t.Fatalf("layout index: %+v, want one image named podtrace:test", im.Manifests)
	}
	if mt := im.Manifests[0].MediaType; mt != "application/vnd.oci.image.manifest.v1+json" {
		t.Errorf("manifest media type %s, want OCI", mt)
	}
	got, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := got.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("User %q, want 65532:65532 (non-root)", cf.Config.User)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/podtrace", "record"}) {
		t.Errorf("Entrypoint %q, want [/podtrace record]", cf.Config.Entrypoint)
	}
	if cf.Config.WorkingDir != "/data" || cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("WorkingDir %q, platform %s/%s; want /data, linux/amd64", cf.Config.WorkingDir, cf.OS, cf.Architecture)
	}
	layers, err := got.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v; want 1 on an empty base", len(layers), err)
	}
	files := map[string]*tar.Header{}
	var inside []byte
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
		if h.Name == "podtrace" {
			if inside, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	rc.Close()
	want, _ := os.ReadFile(bin)
	if !bytes.Equal(inside, want) || files["podtrace"].Mode&0o111 == 0 {
		t.Fatalf("the layer's /podtrace: %d bytes, mode %o; want the %d-byte binary, executable", len(inside), files["podtrace"].Mode, len(want))
	}
	if files["data/"] == nil || files["data/"].Uid != 65532 {
		t.Errorf("/data not owned by 65532: %+v", files["data/"])
	}

	// The binary inside is static and prints its version.
	extracted := filepath.Join(dir, "extracted")
	if err := os.WriteFile(extracted, inside, 0o755); err != nil {
		t.Fatal(err)
	}
	if f, err := elf.Open(extracted); err != nil {
		t.Fatal(err)
	} else {
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("the binary has an ELF interpreter: not static")
			}
		}
		f.Close()
	}
	out, err := exec.Command(extracted, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "v0.0.0-imagetest") {
		t.Errorf("podtrace --version: %v %q, want the version set at build", err, out)
	}

	// The tarball, as crane push reads it (docker save's format: its
	// manifest differs, its config and layer are the layout's).
	fromTar, err := tarball.ImageFromPath(tarPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	c1, _ := fromTar.ConfigName()
	c2, _ := got.ConfigName()
	tl, _ := fromTar.Layers()
	var l1, l2 string
	if len(tl) == 1 {
		d, _ := tl[0].DiffID()
		l1 = d.String()
	}
	if d, err := layers[0].DiffID(); err == nil {
		l2 = d.String()
	}
	if c1 != c2 || l1 != l2 {
		t.Errorf("tarball config %s layer %s, layout config %s layer %s: want the same", c1, l1, c2, l2)
	}
	d2, _ := got.Digest()

	// Reproducible: the same binary gives the same image.
	again, err := Build(Options{Binary: bin, Ref: "podtrace:test", Arch: "amd64", Created: time.Unix(0, 0).UTC()})
	if err != nil {
		t.Fatal(err)
	}
	if d3, _ := again.Digest(); d3 != d2 {
		t.Errorf("a second build %s differs from the first %s", d3, d2)
	}
}
