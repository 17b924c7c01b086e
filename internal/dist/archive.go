package dist

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"time"

	kargofleet "github.com/kargo-fleet/kargo-fleet"
)

// NoticesFile names the third-party notices: the licences of the Go
// modules the binary links, in every archive and (under /licenses) in the
// image.
const NoticesFile = "THIRD_PARTY_NOTICES"

// ArchiveFiles are the files of every release archive, in archive order:
// the binary, the licence it is distributed under and the third-party
// notices.
var ArchiveFiles = []string{BinaryName, kargofleet.LicenseFile, NoticesFile}

// WriteArchive writes a release archive (tar.gz) holding binary as
// BinaryName, the LICENSE file and notices as NoticesFile, every entry
// stamped with mtime so the same inputs give the same bytes.
func WriteArchive(w io.Writer, binary, notices []byte, mtime time.Time) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	entries := []struct {
		name string
		mode int64
		data []byte
	}{
		{BinaryName, 0o755, binary},
		{kargofleet.LicenseFile, 0o644, kargofleet.License()},
		{NoticesFile, 0o644, notices},
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
