package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kargo-fleet/kargo-fleet/internal/version"
)

// versionInfo is what `kargo-fleet version -o json|yaml` prints.
type versionInfo struct {
	// Version is the release, or the module version of a source build.
	Version string `json:"version"`
}

func newVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	output := newOutputOptions(false, false)
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := output.validate(); err != nil {
				return err
			}
			if !output.text() {
				return output.printValue(streams.Out, versionInfo{Version: version.Get()})
			}
			_, err := fmt.Fprintf(streams.Out, "kargo-fleet %s\n", version.Get())
			return err
		},
	}
	output.addFlags(cmd)
	return cmd
}
