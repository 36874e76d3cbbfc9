// Command nodeimages builds the two images the local cluster's real node runs,
// without a container engine and without pulling anything:
//
//   - busybox: a static busybox (Debian's busybox-static) as /bin/busybox,
//     with a link for each of its applets (busybox --list-full), so that test
//     pods can run sh, sleep, cat, wget...;
//   - pause: the static pause program (../pause), containerd's sandbox image.
//
// Both go into one docker-archive tarball that `ctr -n k8s.io images import`
// loads into containerd:
//
//	go run ./nodeimages -busybox /bin/busybox -pause _output/bin/pause -tar _output/bin/node-images.tar
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The images' names. The test pods name them with imagePullPolicy Never or
// IfNotPresent: no registry is ever asked.
const (
	BusyboxRef = "podtrace.local/busybox:1"
	PauseRef   = "podtrace.local/pause:1"
)

// Options say what to build.
type Options struct {
	Busybox string    // the static busybox binary
	Applets []string  // paths of its applets, e.g. bin/sh (busybox --list-full)
	Pause   string    // the static pause binary
	Arch    string    // GOARCH of both binaries
	Created time.Time // the images' creation time and the files' mtime (reproducible)
}

// Build returns the images by name.
func Build(o Options) (map[name.Reference]v1.Image, error) {
	busybox, err := os.ReadFile(o.Busybox)
	if err != nil {
		return nil, fmt.Errorf("read busybox: %w", err)
	}
	pause, err := os.ReadFile(o.Pause)
	if err != nil {
		return nil, fmt.Errorf("read pause: %w", err)
	}
	links, dirs := appletLinks(o.Applets)
	bbFiles, err := layerTar(o.Created, func(w *tarWriter) {
		for _, d := range dirs {
			w.dir(d+"/", 0o755)
		}
		w.file("bin/busybox", 0o755, busybox)
		for _, l := range links {
			w.link(l, "/bin/busybox")
		}
		w.dir("etc/", 0o755)
		w.file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"))
		w.file("etc/group", 0o644, []byte("root:x:0:\nnobody:x:65534:\n"))
		w.dir("root/", 0o700)
		w.dir("tmp/", 0o1777)
	})
	if err != nil {
		return nil, err
	}
	pauseFiles, err := layerTar(o.Created, func(w *tarWriter) { w.file("pause", 0o755, pause) })
	if err != nil {
		return nil, err
	}
	bb, err := image(o, bbFiles, "hack/image/nodeimages: /bin/busybox and its applets", func(c *v1.Config) {
		c.Env = []string{"PATH=/bin:/sbin:/usr/bin:/usr/sbin"}
		c.Cmd = []string{"sh"}
	})
	if err != nil {
		return nil, err
	}
	pa, err := image(o, pauseFiles, "hack/image/nodeimages: /pause", func(c *v1.Config) {
		c.Entrypoint = []string{"/pause"}
	})
	if err != nil {
		return nil, err
	}
	images := map[name.Reference]v1.Image{}
	for ref, img := range map[string]v1.Image{BusyboxRef: bb, PauseRef: pa} {
		tag, err := name.NewTag(ref)
		if err != nil {
			return nil, err
		}
		images[tag] = img
	}
	return images, nil
}

// image is one layer on an empty base, with its config set by config.
func image(o Options, files []byte, createdBy string, config func(*v1.Config)) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(files)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:   layer,
		History: v1.History{CreatedBy: createdBy, Created: v1.Time{Time: o.Created}},
	})
	if err != nil {
		return nil, fmt.Errorf("append the layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", o.Arch
	cf.Created = v1.Time{Time: o.Created}
	config(&cf.Config)
	return mutate.ConfigFile(img, cf)
}

// tarWriter writes a layer's entries, keeping the first error.
type tarWriter struct {
	tw    *tar.Writer
	mtime time.Time
	err   error
}

func (w *tarWriter) header(h *tar.Header) {
	if w.err == nil {
		h.ModTime, h.Format = w.mtime, tar.FormatPAX
		w.err = w.tw.WriteHeader(h)
	}
}

func (w *tarWriter) dir(name string, mode int64) {
	w.header(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode})
}

func (w *tarWriter) file(name string, mode int64, data []byte) {
	w.header(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data))})
	if w.err == nil {
		_, w.err = w.tw.Write(data)
	}
}

func (w *tarWriter) link(name, target string) {
	w.header(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777})
}

// layerTar returns the tar that fill writes.
func layerTar(mtime time.Time, fill func(*tarWriter)) ([]byte, error) {
	var buf bytes.Buffer
	w := &tarWriter{tw: tar.NewWriter(&buf), mtime: mtime}
	fill(w)
	if err := errors.Join(w.err, w.tw.Close()); err != nil {
		return nil, fmt.Errorf("layer tar: %w", err)
	}
	return buf.Bytes(), nil
}

// appletLinks returns the applets' paths (bin/busybox itself left out) and
// the directories they need, parents first.
func appletLinks(applets []string) (links, dirs []string) {
	seen := map[string]bool{"bin": true}
	dirs = []string{"bin"}
	for _, a := range applets {
		a = strings.TrimPrefix(path.Clean("/"+a), "/")
		if a == "" || a == "bin/busybox" || slices.Contains(links, a) {
			continue
		}
		links = append(links, a)
		for d := path.Dir(a); d != "." && !seen[d]; d = path.Dir(d) {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	slices.Sort(dirs) // a parent sorts before its children
	return links, dirs
}

// applets asks busybox for the paths of its applets.
func applets(busybox string) ([]string, error) {
	out, err := exec.Command(busybox, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list-full: %w", busybox, err)
	}
	list := strings.Fields(string(out))
	if !slices.Contains(list, "bin/sh") {
		return nil, fmt.Errorf("%s --list-full names no bin/sh: is it busybox?", busybox)
	}
	return list, nil
}

func main() {
	var o Options
	var tarPath string
	flag.StringVar(&o.Busybox, "busybox", "/bin/busybox", "a static busybox (Debian: busybox-static)")
	flag.StringVar(&o.Pause, "pause", "", "the static pause binary (go build ./pause with CGO_ENABLED=0)")
	flag.StringVar(&o.Arch, "arch", runtime.GOARCH, "the binaries' GOARCH")
	flag.StringVar(&tarPath, "tar", "", "write the docker-archive tarball here")
	flag.Parse()
	if o.Pause == "" || tarPath == "" {
		fmt.Fprintln(os.Stderr, "nodeimages: error: -pause and -tar are required")
		os.Exit(2)
	}
	o.Created = time.Unix(0, 0).UTC()
	var err error
	if o.Applets, err = applets(o.Busybox); err != nil {
		fmt.Fprintln(os.Stderr, "nodeimages: error:", err)
		os.Exit(1)
	}
	images, err := Build(o)
	if err == nil {
		err = tarball.MultiRefWriteToFile(tarPath, images)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "nodeimages: error:", err)
		os.Exit(1)
	}
	fmt.Printf("images %s and %s in %s\n", BusyboxRef, PauseRef, tarPath)
}
