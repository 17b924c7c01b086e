package cli

import (
	goflag "flag"

	"github.com/spf13/cobra"
)

// flagSetOf returns a standard-library flag set whose flags are added to the
// command, for libraries (zap, klog) that bind to *flag.FlagSet.
func flagSetOf(cmd *cobra.Command) *goflag.FlagSet {
	fs := goflag.NewFlagSet(cmd.Name(), goflag.ContinueOnError)
	cmd.Flags().AddGoFlagSet(fs)
	return fs
}
