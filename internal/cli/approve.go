package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	fleetrule "github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// approveOptions configures `kargo-fleet approve`.
type approveOptions struct {
	kube       kubeOptions
	fleetStage string
	wave       string
	rollout    string
	streams    genericiooptions.IOStreams
}

func newApproveCommand(streams genericiooptions.IOStreams, kube kubeOptions) *cobra.Command {
	o := &approveOptions{kube: kube, streams: streams}
	cmd := &cobra.Command{
		Use:   "approve [FLEETSTAGE] --wave WAVE",
		Short: "Approve a wave of a fleet's rollout that needs several people's approval",
		Long: "Gives your approval, as the Kubernetes user you are, to a wave whose spec.waves[].approvals asks for " +
			"several distinct people. The approval is for the FleetStage's current rollout (or --rollout), so for one " +
			"Freight and one rollout; the same person counts once, and the rollout's starter counts only when the " +
			"wave says so. It needs the verb approve on the FleetStage (the chart's ClusterRole kargo-fleet-approver), " +
			"checked at admission. An approval is never taken back: pause or abort the rollout instead.",
		Example:           "  kargo-fleet approve prod -n shop --wave general",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeFleetStages(&o.kube),
		RunE:              fleetStageRunE(&o.fleetStage, o.validate, o.run),
	}
	o.kube.addFlags(cmd, streams)
	cmd.Flags().StringVar(&o.wave, "wave", "", "The wave to approve (required).")
	cmd.Flags().StringVar(&o.rollout, "rollout", "", "The FleetRollout to approve (default: the FleetStage's current one).")
	return cmd
}

func (o *approveOptions) validate() error {
	if o.wave == "" {
		return errors.New("--wave names the wave to approve")
	}
	return nil
}

func (o *approveOptions) run(ctx context.Context) error {
	c, fs, err := o.kube.connectFleetStage(ctx, o.fleetStage)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(fs.Spec.Waves, func(w fleetv1alpha1.Wave) bool { return w.Name == o.wave })
	if i < 0 || fs.Spec.Waves[i].Approvals == nil {
		return fmt.Errorf("wave %q of FleetStage %s takes no N-person approval (spec.waves[].approvals); a wave that waits "+
			"for kargo approve goes on with: kargo approve --project %s --freight <freight> --stage <wave Stage>",
			o.wave, fs.Name, fs.Namespace)
	}
	name := o.rollout
	if name == "" {
		name = fs.Status.CurrentRollout
	}
	if name == "" {
		return fmt.Errorf("FleetStage %s has no current rollout to approve", fs.Name)
	}
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		return fmt.Errorf("error asking the API server who you are: %w", err)
	}
	me := review.Status.UserInfo
	for attempt := 0; ; attempt++ {
		ro := &fleetv1alpha1.FleetRollout{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: name}, ro); err != nil {
			return fmt.Errorf("error getting FleetRollout %s: %w", name, err)
		}
		before := ro.DeepCopy()
		approvals := append(fleetrule.ApprovalsOf(ro, o.wave),
			fleetrule.Approval{User: me.Username, Groups: me.Groups, At: metav1.NewTime(time.Now().UTC().Truncate(time.Second))})
		if ro.Annotations == nil {
			ro.Annotations = map[string]string{}
		}
		ro.Annotations[fleetv1alpha1.ApprovalsAnnotationPrefix+o.wave] = fleetrule.EncodeApprovals(approvals)
		err := c.Patch(ctx, ro, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsConflict(err) && attempt < 5 {
			continue // someone else approved meanwhile
		}
		if err != nil {
			return fmt.Errorf("error approving wave %s of FleetRollout %s: %w", o.wave, name, err)
		}
		q := fleetrule.JudgeQuorum(fs.Spec.Waves[i].Approvals, ro.Spec.Actor, approvals)
		_, err = fmt.Fprintf(o.streams.Out, "Approved wave %s of FleetRollout %s (Freight %s) as %s: %s\n",
			o.wave, name, ro.Spec.Freight.Name, me.Username, q)
		return err
	}
}
