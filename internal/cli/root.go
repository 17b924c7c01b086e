// Package cli holds the kargo-fleet command's verbs, one file each: an
// options struct with addFlags, validate and run, writers injected so output
// can be tested.
package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"
)

// NewRootCommand returns the kargo-fleet command with every verb.
func NewRootCommand(out, errOut io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "kargo-fleet",
		Short:         "Fleet promotion for Kargo: waves, thresholds and rollback across many clusters",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	// Installed as kubectl-fleet, the binary is the kubectl plugin
	// `kubectl fleet`: help and usage say so.
	if strings.HasPrefix(filepath.Base(os.Args[0]), "kubectl-") {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl fleet"}
	}
	root.SetOut(out)
	root.SetErr(errOut)
	root.AddCommand(
		newVersionCommand(out),
		newControllerCommand(out, errOut),
		newStepCommand(out, errOut),
		newStatusCommand(out, kubeOptions{}, clock.RealClock{}),
		newPauseCommand(out, kubeOptions{}),
		newResumeCommand(out, kubeOptions{}),
		newAbortCommand(out, kubeOptions{}),
		newRollbackCommand(out, kubeOptions{}),
		newPlanCommand(os.Stdin, out, errOut),
		newTargetsCommand(out, errOut, kubeOptions{}),
		newHistoryCommand(out, kubeOptions{}),
		newDoctorCommand(out, kubeOptions{}, clock.RealClock{}),
		newDashboardCommand(out, kubeOptions{}),
	)
	return root
}
