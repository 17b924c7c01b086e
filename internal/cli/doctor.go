package cli

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"

	fswebhook "github.com/kargo-fleet/kargo-fleet/fleetstage/webhook"
	"github.com/kargo-fleet/kargo-fleet/internal/doctor"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// doctorOptions configures `kargo-fleet doctor`.
type doctorOptions struct {
	kube                kubeOptions
	fleetStage          string
	release             string
	controllerNamespace string
	shardPickupTimeout  time.Duration
	kargoNamespace      string
	output              *outputOptions

	streams genericiooptions.IOStreams
	clock   clock.PassiveClock
}

func newDoctorCommand(streams genericiooptions.IOStreams, kube kubeOptions, clk clock.PassiveClock) *cobra.Command {
	o := &doctorOptions{kube: kube, output: newOutputOptions(false, false), streams: streams, clock: clk}
	cmd := &cobra.Command{
		Use:   "doctor [FLEETSTAGE]",
		Short: "Check that Kargo and kargo-fleet are ready for a rollout",
		Long: "Runs preflight checks after installing and before the first rollout, one line each (ok, warn or fail " +
			"with the fix): Kargo's CRDs and the Kargo version they match, kargo-fleet's CRDs and " +
			"ClusterPromotionTasks, the step server behind the tasks' URL, the controller's leader Lease, the " +
			"validating webhook, and the step token Secret of every Project with a FleetStage. The release is found " +
			"by its controller Deployment's labels, whatever its name and namespace; --release chooses among " +
			"several. Given a FLEETSTAGE " +
			"(-n its Project), it also checks that every target's Argo CD Application authorizes its target Stage, " +
			"that no ProjectConfig auto-promotion lets Freight skip the fleet, that every target gets an open " +
			"change window, that every wave can halt, that a Kargo controller reconciles every shard its Stages are on " +
			"(by the controllers' heartbeat Leases in Kargo's namespace, --kargo-namespace) " +
			"and how close the Project is to the size ceiling of a Freight's status. Exits non-zero when a check fails.",
		Example: "  kargo-fleet doctor\n  kargo-fleet doctor --release fleet --controller-namespace platform\n" +
			"  kargo-fleet doctor prod -n shop\n  kubectl fleet doctor prod -n shop -o json",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeFleetStages(&o.kube),
		RunE:              fleetStageRunE(&o.fleetStage, o.validate, o.run),
	}
	o.addFlags(cmd)
	return cmd
}

func (o *doctorOptions) addFlags(cmd *cobra.Command) {
	o.kube.addFlags(cmd, o.streams)
	o.output.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&o.release, "release", "",
		"Helm release of kargo-fleet to check (its objects' app.kubernetes.io/instance label); default: the only one installed.")
	f.StringVar(&o.controllerNamespace, "controller-namespace", "",
		"Namespace kargo-fleet is installed in; default: found from its Deployment (else "+doctor.DefaultControllerNamespace+").")
	f.DurationVar(&o.shardPickupTimeout, "shard-pickup-timeout", doctor.DefaultShardPickupTimeout,
		"How long a FLEETSTAGE's Stage may go without a status, or its Promotion without a phase, before doctor says "+
			"no Kargo controller runs its shard, when Kargo's controllers keep no heartbeat Lease.")
	f.StringVar(&o.kargoNamespace, "kargo-namespace", kargo.DefaultNamespace,
		"Namespace Kargo is installed in (its controllers' KARGO_NAMESPACE), where they keep their heartbeat Leases.")
}

func (o *doctorOptions) validate() error {
	return o.output.validate()
}

// run prints the report and fails when a check failed, so scripts can gate
// on the exit code.
func (o *doctorOptions) run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	c, ns, err := o.kube.connect()
	if err != nil {
		return err
	}
	d := doctor.New(c, doctor.Options{Release: o.release, ControllerNamespace: o.controllerNamespace,
		Now: o.clock.Now(), ShardPickupTimeout: o.shardPickupTimeout, KargoNamespace: o.kargoNamespace,
		Access: fswebhook.NewSubjectAccessReviewer(c)})
	results := d.Install(ctx)
	if o.fleetStage != "" && results[0].Check != doctor.CheckAPIServer {
		fs, err := getFleetStage(ctx, c, ns, o.fleetStage)
		if err != nil {
			return err
		}
		results = append(results, d.FleetStage(ctx, fs)...)
	}
	r := doctor.NewReport(results)
	var buf bytes.Buffer
	if !o.output.text() {
		err = o.output.printValue(&buf, r)
	} else {
		err = doctor.RenderText(&buf, r)
	}
	if err != nil {
		return err
	}
	if _, err := o.streams.Out.Write(buf.Bytes()); err != nil {
		return err
	}
	if r.Failed > 0 {
		return fmt.Errorf("%d of %d checks failed", r.Failed, len(r.Results))
	}
	return nil
}
