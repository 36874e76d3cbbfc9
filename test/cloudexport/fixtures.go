package cloudexport

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// LocalLog is the fixtures' kube-apiserver audit log, relative to their
// directory; the providers' files are generated from it.
const LocalLog = "local/audit.log"

// Files returns the providers' fixture files for the events, by path
// relative to the fixtures' directory.
func Files(events []Event) (map[string][]byte, error) {
	out := map[string][]byte{}
	write := func(path string, fn func(*bytes.Buffer) error) error {
		var b bytes.Buffer
		if err := fn(&b); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		out[path] = b.Bytes()
		return nil
	}
	g, x, a := DefaultGKE, DefaultEKS, DefaultAKS
	task := fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", fnv(x.Cluster)>>32, fnv("task")&0xffff, fnv("export")&0xffff, fnv(x.Cluster)&0xffff, fnv(x.Cluster+"task")&0xffffffffffff)
	// The storage account's blobs hold an hour each.
	hours := map[string][]Event{}
	for _, e := range events {
		if adminEvent(e) {
			p := "aks/storage/" + a.BlobPath("kube-audit-admin", e)
			hours[p] = append(hours[p], e)
		}
	}
	blobs := make([]string, 0, len(hours))
	for p := range hours {
		blobs = append(blobs, p)
	}
	sort.Strings(blobs)
	steps := []struct {
		path string
		fn   func(*bytes.Buffer) error
	}{
		{"gke/entries.json", func(b *bytes.Buffer) error { return g.WriteArray(b, events) }},
		{"eks/filter-log-events.json", func(b *bytes.Buffer) error { return x.WriteFilterLogEvents(b, events) }},
		{"eks/s3/" + task + "/" + x.Stream() + "/000000.gz", func(b *bytes.Buffer) error { return x.WriteS3(b, events) }},
		{"aks/aksauditadmin.json", func(b *bytes.Buffer) error { return a.WriteTable(b, events) }},
	}
	for _, p := range blobs {
		evs := hours[p]
		steps = append(steps, struct {
			path string
			fn   func(*bytes.Buffer) error
		}{p, func(b *bytes.Buffer) error { return a.WriteStorage(b, evs) }})
	}
	for _, s := range steps {
		if err := write(s.path, s.fn); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// WriteFixtures generates the providers' files in dir from dir/LocalLog,
// removing the files of a previous generation first.
func WriteFixtures(dir string) error {
	f, err := os.Open(filepath.Join(dir, LocalLog))
	if err != nil {
		return err
	}
	events, err := Read(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", LocalLog, err)
	}
	files, err := Files(events)
	if err != nil {
		return err
	}
	for _, sub := range []string{"gke/entries.json", "eks/filter-log-events.json", "eks/s3", "aks/aksauditadmin.json", "aks/storage"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return err
		}
	}
	for p, b := range files {
		path := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
