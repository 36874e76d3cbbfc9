// Command image packages a static podtrace binary as an OCI image, without a
// container engine and without pulling a base image: one layer on an empty
// base, holding /podtrace, an /etc/passwd and /etc/group naming the non-root
// user it runs as, and the /data and /tmp directories. It writes an OCI
// layout directory and a tarball that `crane push` sends to a registry.
//
//	go run ./hack/image -binary _output/image/podtrace -layout _output/image/oci -tar _output/image/podtrace.tar
//
// It lives in a module of its own so that go-containerregistry stays out of
// podtrace's.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user the image runs as: 65532, "nonroot" as in distroless images, so
// that runAsNonRoot admits it and a volume's fsGroup can match it.
const (
	uid      = 65532
	gid      = 65532
	userName = "nonroot"
)

// Options say what to build.
type Options struct {
	Binary  string    // the static podtrace binary
	Ref     string    // the image's name in the tarball and the layout, e.g. podtrace:dev
	Arch    string    // GOARCH of the binary
	Created time.Time // the image's creation time and the files' mtime (reproducible)
}

// Build returns the image.
func Build(o Options) (v1.Image, error) {
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("read the binary: %w", err)
	}
	files, err := rootfs(bin, o.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(files)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{CreatedBy: "hack/image: /podtrace, /etc/passwd, /etc/group, /data, /tmp", Created: v1.Time{Time: o.Created}},
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
	cf.Config.User = fmt.Sprintf("%d:%d", uid, gid)
	cf.Config.Entrypoint = []string{"/podtrace", "record"}
	cf.Config.Cmd = nil
	cf.Config.WorkingDir = "/data"
	cf.Config.Env = []string{"PATH=/", "HOME=/data"}
	cf.Config.Labels = map[string]string{"org.opencontainers.image.title": "podtrace"}
	return mutate.ConfigFile(img, cf)
}

// rootfs returns the layer's tar: the binary, the user and group files, and
// the directories record writes to.
func rootfs(bin []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64, owner int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: owner, Gid: owner, ModTime: mtime, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:/data:/sbin/nologin\n", userName, uid, gid, userName)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", userName, gid)
	err := errors.Join(
		dir("etc/", 0o755, 0),
		file("etc/passwd", 0o644, []byte(passwd)),
		file("etc/group", 0o644, []byte(group)),
		dir("data/", 0o755, uid), // the trace, when no volume is mounted there
		dir("tmp/", 0o1777, 0),
		file("podtrace", 0o755, bin),
		tw.Close(),
	)
	if err != nil {
		return nil, fmt.Errorf("layer tar: %w", err)
	}
	return buf.Bytes(), nil
}

// Write writes img as an OCI layout in dir (replaced) and, if tarPath is set,
// as a tarball named ref.
func Write(img v1.Image, ref, dir, tarPath string) error {
	if dir != "" {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		p, err := layout.Write(dir, empty.Index)
		if err != nil {
			return fmt.Errorf("OCI layout %s: %w", dir, err)
		}
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref})); err != nil {
			return fmt.Errorf("OCI layout %s: %w", dir, err)
		}
	}
	if tarPath != "" {
		tag, err := name.NewTag(ref)
		if err != nil {
			return fmt.Errorf("-ref %q: %w", ref, err)
		}
		if err := tarball.WriteToFile(tarPath, tag, img); err != nil {
			return fmt.Errorf("tarball %s: %w", tarPath, err)
		}
	}
	return nil
}

func main() {
	var o Options
	var dir, tarPath string
	flag.StringVar(&o.Binary, "binary", "", "the static podtrace binary (CGO_ENABLED=0)")
	flag.StringVar(&o.Ref, "ref", "podtrace:dev", "the image's name in the layout and the tarball")
	flag.StringVar(&o.Arch, "arch", runtime.GOARCH, "the binary's GOARCH")
	flag.StringVar(&dir, "layout", "", "write an OCI layout directory here (replaced)")
	flag.StringVar(&tarPath, "tar", "", "write a tarball here, for `crane push TARBALL REF`")
	flag.Parse()
	o.Created = time.Unix(0, 0).UTC()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		var sec int64
		if _, err := fmt.Sscan(s, &sec); err == nil {
			o.Created = time.Unix(sec, 0).UTC()
		}
	}
	if o.Binary == "" || dir == "" && tarPath == "" {
		fmt.Fprintln(os.Stderr, "image: error: -binary and one of -layout or -tar are required")
		os.Exit(2)
	}
	img, err := Build(o)
	if err == nil {
		err = Write(img, o.Ref, dir, tarPath)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image: error:", err)
		os.Exit(1)
	}
	d, _ := img.Digest()
	fmt.Printf("podtrace image %s (%s): layout %s, tarball %s\n", o.Ref, d, dir, tarPath)
}
