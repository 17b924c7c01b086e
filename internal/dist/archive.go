package dist

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"time"

	kargofleet "github.com/kargo-fleet/kargo-fleet"
)

// ArchiveFiles are the files of every release archive, in archive order:
// the binary and the licence it is distributed under.
var ArchiveFiles = []string{BinaryName, kargofleet.LicenseFile}

// WriteArchive writes a release archive (tar.gz) holding binary as
// BinaryName and the LICENSE file, every entry stamped with mtime so the
// same inputs give the same bytes.
func WriteArchive(w io.Writer, binary []byte, mtime time.Time) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	entries := []struct {
		name string
		mode int64
		data []byte
	}{
		{BinaryName, 0o755, binary},
		{kargofleet.LicenseFile, 0o644, kargofleet.License()},
	}
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.data)), ModTime: mtime, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("error writing %s to the archive: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return fmt.Errorf("error writing %s to the archive: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}
