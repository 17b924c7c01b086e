package cli

import (
	goflag "flag"

	"github.com/spf13/cobra"
)

// addGoFlags adds to the command the flags bind registers on a
// standard-library flag set, for libraries (zap, klog) that bind to
// *flag.FlagSet. The flags must be bound before they are added: pflag copies
// the flags a Go flag set holds when it is added, not later ones.
func addGoFlags(cmd *cobra.Command, bind func(*goflag.FlagSet)) {
	fs := goflag.NewFlagSet(cmd.Name(), goflag.ContinueOnError)
	bind(fs)
	cmd.Flags().AddGoFlagSet(fs)
}
