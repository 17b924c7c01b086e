// Package cli holds the kargo-fleet command's verbs, one file each: an
// options struct with addFlags, validate and run, reading kubectl's
// connection flags, printing through kubectl's printers and writing to
// injected streams so output can be tested.
package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"
)

// NewRootCommand returns the kargo-fleet command with every verb, reading
// standard input and writing to out and errOut.
func NewRootCommand(out, errOut io.Writer) *cobra.Command {
	return NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: out, ErrOut: errOut})
}

// NewCommand returns the kargo-fleet command with every verb, reading and
// writing the given streams.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:           "kargo-fleet",
		Short:         "Fleet promotion for Kargo: waves, thresholds and rollback across many clusters",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.AddCommand(
		newVersionCommand(streams),
		newControllerCommand(streams.Out, streams.ErrOut),
		newStepCommand(streams.Out, streams.ErrOut),
		newStatusCommand(streams, kubeOptions{}, clock.RealClock{}),
		newPauseCommand(streams, kubeOptions{}),
		newResumeCommand(streams, kubeOptions{}),
		newAbortCommand(streams, kubeOptions{}),
		newRollbackCommand(streams, kubeOptions{}),
		newBreakGlassCommand(streams, kubeOptions{}),
		newApproveCommand(streams, kubeOptions{}),
		newAuditCommand(streams, kubeOptions{}),
		newPlanCommand(streams, kubeOptions{}),
		newTargetsCommand(streams, kubeOptions{}),
		newHistoryCommand(streams, kubeOptions{}),
		newDoctorCommand(streams, kubeOptions{}, clock.RealClock{}),
		newDashboardCommand(streams, kubeOptions{}),
	)
	// Installed as kubectl-fleet, the binary is the kubectl plugin
	// `kubectl fleet`.
	if strings.HasPrefix(filepath.Base(os.Args[0]), "kubectl-") {
		asKubectlPlugin(root)
	}
	formatHelp(root)
	return root
}

// asKubectlPlugin makes root the kubectl plugin `kubectl fleet`: help and
// usage say so, and the commands that run in the cluster (the controller,
// the custom step runner) are hidden from a user's tool.
func asKubectlPlugin(root *cobra.Command) {
	root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl fleet"}
	for _, c := range root.Commands() {
		if c.Name() == "controller" || c.Name() == "step" {
			c.Hidden = true
		}
	}
}
