// Package kargofleet holds what the repository's top folder gives the
// build: the licence text that the release archives and the container image
// carry. go:embed reaches only a package's own folder, hence a package here.
package kargofleet

import _ "embed"

// LicenseSPDX is the SPDX identifier of kargo-fleet's licence, as the image's
// org.opencontainers.image.licenses label states it.
const LicenseSPDX = "Apache-2.0"

// LicenseFile is the file name the licence is shipped under, in the
// repository, in every release archive and (under /licenses) in the image.
const LicenseFile = "LICENSE"

//go:embed LICENSE
var license []byte

// License returns the text of the LICENSE file.
func License() []byte {
	return append([]byte(nil), license...)
}
