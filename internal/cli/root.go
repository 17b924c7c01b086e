// Package cli holds the kargo-fleet command's verbs, one file each: an
// options struct with addFlags, validate and run, writers injected so output
// can be tested.
package cli

import (
	"io"

	"github.com/spf13/cobra"
)

// NewRootCommand returns the kargo-fleet command with every verb.
func NewRootCommand(out, errOut io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "kargo-fleet",
		Short:         "Fleet promotion for Kargo: waves, thresholds and rollback across many clusters",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	root.SetOut(out)
	root.SetErr(errOut)
	root.AddCommand(
		newVersionCommand(out),
		newControllerCommand(out, errOut),
		newStepCommand(out, errOut),
	)
	return root
}
