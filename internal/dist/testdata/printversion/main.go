// Command printversion prints the version stamped into it, as
// `kargo-fleet version` does. Tests build it with dist.BuildPackage: it
// links in seconds where the whole command takes minutes.
package main

import (
	"fmt"

	"github.com/kargo-fleet/kargo-fleet/internal/version"
)

func main() {
	fmt.Println(version.Get())
}
