package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kargo-fleet/kargo-fleet/internal/version"
)

func newVersionCommand(out io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(out, "kargo-fleet %s\n", version.Get())
			return err
		},
	}
}
