package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestBuild builds both images from stand-in binaries, writes the tarball,
// reads each image back and checks its files, links and configuration.
func TestBuild(t *testing.T) {
	dir := t.TempDir()
	bb, pause := filepath.Join(dir, "busybox"), filepath.Join(dir, "pause")
	for _, f := range []string{bb, pause} {
		if err := os.WriteFile(f, []byte("binary "+filepath.Base(f)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	images, err := Build(Options{Busybox: bb, Pause: pause, Arch: "amd64", Created: time.Unix(0, 0).UTC(),
		Applets: []string{"bin/sh", "usr/bin/wget", "sbin/ifconfig", "bin/busybox", "bin/sh"}})
	if err != nil {
		t.Fatal(err)
	}
	tarPath := filepath.Join(dir, "node-images.tar")
	if err := tarball.MultiRefWriteToFile(tarPath, images); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ref        string
		files      map[string]string // regular file -> content
		links      []string          // symlinks to /bin/busybox
		dirs       []string
		entrypoint []string
		cmd        []string
	}{
		{ref: BusyboxRef, files: map[string]string{"bin/busybox": "binary busybox"},
			links: []string{"bin/sh", "sbin/ifconfig", "usr/bin/wget"},
			dirs:  []string{"bin/", "etc/", "sbin/", "tmp/", "usr/", "usr/bin/"}, cmd: []string{"sh"}},
		{ref: PauseRef, files: map[string]string{"pause": "binary pause"}, entrypoint: []string{"/pause"}},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			tag, err := name.NewTag(tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			img, err := tarball.ImageFromPath(tarPath, &tag)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.OS != "linux" || cf.Architecture != "amd64" || !slices.Equal(cf.Config.Entrypoint, tc.entrypoint) || !slices.Equal(cf.Config.Cmd, tc.cmd) {
				t.Errorf("config %s/%s entrypoint %q cmd %q, want linux/amd64 %q %q", cf.OS, cf.Architecture, cf.Config.Entrypoint, cf.Config.Cmd, tc.entrypoint, tc.cmd)
			}
			layers, err := img.Layers()
			if err != nil || len(layers) != 1 {
				t.Fatalf("layers %d (%v), want 1", len(layers), err)
			}
			rc, err := layers[0].Uncompressed()
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			files, links := map[string]string{}, []string{}
			var dirs []string
			tr := tar.NewReader(rc)
			for {
				h, err := tr.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				switch h.Typeflag {
				case tar.TypeReg:
					b, _ := io.ReadAll(tr)
					files[h.Name] = string(b)
				case tar.TypeSymlink:
					if h.Linkname != "/bin/busybox" {
						t.Errorf("link %s -> %s, want /bin/busybox", h.Name, h.Linkname)
					}
					links = append(links, h.Name)
				case tar.TypeDir:
					dirs = append(dirs, h.Name)
				}
			}
			for f, want := range tc.files {
				if files[f] != want {
					t.Errorf("file %s = %q, want %q", f, files[f], want)
				}
			}
			slices.Sort(links)
			if !slices.Equal(links, tc.links) && (len(links) > 0 || len(tc.links) > 0) {
				t.Errorf("links %v, want %v (each applet once, busybox itself not a link)", links, tc.links)
			}
			for _, d := range tc.dirs {
				if !slices.Contains(dirs, d) {
					t.Errorf("no directory %s in %v", d, dirs)
				}
			}
		})
	}
}
