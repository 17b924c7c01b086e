package cli

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	authenticationv1 "k8s.io/api/authentication/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// defaultActor is the actor recorded on rollouts the CLI creates when the
// API server cannot say who the user is.
const defaultActor = "kargo-fleet-cli"

// kubeOptions are the connection flags of the verbs that talk to the
// cluster: kubectl's own (genericclioptions.ConfigFlags), so --kubeconfig,
// --context, -n, --as, --as-group, --token, --server, --request-timeout and
// the rest mean what they mean to kubectl (also under `kubectl fleet`).
type kubeOptions struct {
	flags *genericclioptions.ConfigFlags

	// client, when set, is used instead of one built from the flags; tests
	// set it to a fake client.
	client client.Client
}

// addFlags adds kubectl's connection flags to f, their warnings going to
// streams.ErrOut.
func (k *kubeOptions) addFlags(cmd *cobra.Command, streams genericiooptions.IOStreams) {
	if k.flags == nil {
		k.flags = genericclioptions.NewConfigFlags(true).WithWarningPrinter(streams)
	}
	conn := pflag.NewFlagSet("connection", pflag.ContinueOnError)
	k.flags.AddFlags(conn)
	conn.Lookup("namespace").Usage = "Kargo Project (namespace) of the FleetStage (default: the context's namespace)."
	groupFlags(conn, connectionFlags)
	cmd.Flags().AddFlagSet(conn)
	k.registerCompletions(cmd)
}

// namespaceFlag returns the value of -n ("" when not given).
func (k *kubeOptions) namespaceFlag() string {
	if k.flags == nil || k.flags.Namespace == nil {
		return ""
	}
	return *k.flags.Namespace
}

// connect returns a client and the namespace to work in.
func (k *kubeOptions) connect() (client.Client, string, error) {
	if k.client != nil {
		return k.client, cmp.Or(k.namespaceFlag(), "default"), nil
	}
	cfg, ns, err := k.restConfig()
	if err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: cliScheme()})
	if err != nil {
		return nil, "", fmt.Errorf("error creating a client for %s: %w", cfg.Host, err)
	}
	k.client = c
	return c, ns, nil
}

// restConfig loads the kubeconfig as kubectl does, with the flags'
// overrides, and returns the config and the namespace to work in.
func (k *kubeOptions) restConfig() (*rest.Config, string, error) {
	if k.flags == nil {
		k.flags = genericclioptions.NewConfigFlags(true)
	}
	cfg, err := k.flags.ToRESTConfig()
	if err != nil {
		return nil, "", fmt.Errorf("error loading kubeconfig: %w", err)
	}
	ns, _, err := k.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("error reading the namespace from the kubeconfig: %w", err)
	}
	return cfg, ns, nil
}

// connectFleetStage connects and reads the named FleetStage (the
// namespace's only one when name is empty).
func (k *kubeOptions) connectFleetStage(ctx context.Context, name string) (client.Client, *fleetv1alpha1.FleetStage, error) {
	c, ns, err := k.connect()
	if err != nil {
		return nil, nil, err
	}
	fs, err := getFleetStage(ctx, c, ns, name)
	if err != nil {
		return nil, nil, err
	}
	return c, fs, nil
}

// cliScheme knows the kinds the CLI reads and writes.
func cliScheme() *apiruntime.Scheme {
	s := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, fleetv1alpha1.AddToScheme, kargo.AddToScheme, inventory.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// getFleetStage returns the named FleetStage, or the namespace's only one
// when name is empty.
func getFleetStage(ctx context.Context, c client.Client, ns, name string) (*fleetv1alpha1.FleetStage, error) {
	if name != "" {
		fs := &fleetv1alpha1.FleetStage{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, fs); err != nil {
			return nil, fmt.Errorf("error getting FleetStage %q in namespace %q: %w", name, ns, err)
		}
		return fs, nil
	}
	var list fleetv1alpha1.FleetStageList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("error listing FleetStages in namespace %q: %w", ns, err)
	}
	switch len(list.Items) {
	case 0:
		return nil, fmt.Errorf("namespace %q has no FleetStage: pass the Kargo Project with -n", ns)
	case 1:
		return &list.Items[0], nil
	}
	names := make([]string, 0, len(list.Items))
	for i := range list.Items {
		names = append(names, list.Items[i].Name)
	}
	slices.Sort(names)
	return nil, fmt.Errorf("namespace %q has %d FleetStages (%s): name one", ns, len(names), strings.Join(names, ", "))
}

// listRollouts returns the FleetRollouts of a FleetStage, oldest first.
func listRollouts(ctx context.Context, c client.Client, fs *fleetv1alpha1.FleetStage) ([]fleetv1alpha1.FleetRollout, error) {
	var list fleetv1alpha1.FleetRolloutList
	if err := c.List(ctx, &list, client.InNamespace(fs.Namespace)); err != nil {
		return nil, fmt.Errorf("error listing FleetRollouts in namespace %q: %w", fs.Namespace, err)
	}
	out := make([]fleetv1alpha1.FleetRollout, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].Spec.FleetStage == fs.Name {
			out = append(out, list.Items[i])
		}
	}
	slices.SortStableFunc(out, func(a, b fleetv1alpha1.FleetRollout) int { return fleetrollout.Compare(&a, &b) })
	return out, nil
}

// whoAmI asks the API server who the user is (a SelfSubjectReview) and
// returns it as Kargo names actors, "kubernetes:<user>"; defaultActor when
// the server does not say.
func whoAmI(ctx context.Context, c client.Client) string {
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil || review.Status.UserInfo.Username == "" {
		return defaultActor
	}
	return "kubernetes:" + review.Status.UserInfo.Username
}

// shortFreight abbreviates a Kargo Freight name (40 hex digits) to 7.
func shortFreight(name string) string {
	if len(name) == 40 {
		return name[:7]
	}
	return name
}

// describeRollout says what a rollout is in one phrase:
// "Forward to 1a2b3c4, Progressing".
func describeRollout(ro *fleetv1alpha1.FleetRollout) string {
	return fmt.Sprintf("%s to %s, %s", cmp.Or(ro.Spec.Direction, fleetv1alpha1.DirectionForward),
		shortFreight(ro.Spec.Freight.Name), cmp.Or(ro.Status.Phase, fleetv1alpha1.RolloutPending))
}

// fleetStageRunE is the RunE of verbs taking an optional FLEETSTAGE argument:
// it records the argument, validates the options, then runs.
func fleetStageRunE(fleetStage *string, validate func() error, run func(context.Context) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 1 {
			*fleetStage = args[0]
		}
		if err := validate(); err != nil {
			return err
		}
		return run(cmd.Context())
	}
}
