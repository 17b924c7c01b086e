package cli

import (
	"slices"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// registerCompletions completes kubectl's connection flags: -n with the
// Kargo Projects, --context, --cluster and --user with the kubeconfig's
// entries.
func (k *kubeOptions) registerCompletions(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("namespace", k.completeProjects)
	kubeconfig := func(names func(*api.Config) []string) completionFunc {
		return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			raw, err := k.flags.ToRawKubeConfigLoader().RawConfig()
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			out := names(&raw)
			slices.Sort(out)
			return withPrefix(out, toComplete), cobra.ShellCompDirectiveNoFileComp
		}
	}
	_ = cmd.RegisterFlagCompletionFunc("context", kubeconfig(func(c *api.Config) []string { return keys(c.Contexts) }))
	_ = cmd.RegisterFlagCompletionFunc("cluster", kubeconfig(func(c *api.Config) []string { return keys(c.Clusters) }))
	_ = cmd.RegisterFlagCompletionFunc("user", kubeconfig(func(c *api.Config) []string { return keys(c.AuthInfos) }))
}

// completeFleetFlags completes the verb's --freight and --to with the
// Project's Freight and its --target with the fleet's target IDs, for the
// ones it has; called once the verb's own flags are defined.
func (k *kubeOptions) completeFleetFlags(cmd *cobra.Command) {
	for _, flag := range []string{"freight", "to"} {
		if cmd.Flags().Lookup(flag) != nil {
			_ = cmd.RegisterFlagCompletionFunc(flag, k.completeFreight)
		}
	}
	if cmd.Flags().Lookup("target") != nil {
		_ = cmd.RegisterFlagCompletionFunc("target", k.completeTargets)
	}
}

// keys returns a map's keys.
func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for name := range m {
		out = append(out, name)
	}
	return out
}

// completeProjects completes -n with the Kargo Projects' namespaces.
func (k *kubeOptions) completeProjects(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ctx, cancel := completionContext(cmd)
	defer cancel()
	c, _, err := k.connect()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var list corev1.NamespaceList
	if err := c.List(ctx, &list, client.MatchingLabels{kargo.ProjectLabel: "true"}); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, 0, len(list.Items))
	for i := range list.Items {
		names = append(names, list.Items[i].Name)
	}
	slices.Sort(names)
	return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeFreight completes a Freight flag with the Project's Freight,
// newest first, by name (an alias is shown as its description).
func (k *kubeOptions) completeFreight(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ctx, cancel := completionContext(cmd)
	defer cancel()
	c, ns, err := k.connect()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var list kargo.FreightList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	slices.SortFunc(list.Items, func(a, b kargo.Freight) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	out := make([]cobra.Completion, 0, len(list.Items))
	for i := range list.Items {
		f := &list.Items[i]
		if len(toComplete) > len(f.Name) || f.Name[:len(toComplete)] != toComplete {
			continue
		}
		out = append(out, cobra.CompletionWithDesc(f.Name, f.Alias))
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

// completeTargets completes --target with the target IDs of the FleetStage
// given as argument (the namespace's only one when none is given).
func (k *kubeOptions) completeTargets(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ctx, cancel := completionContext(cmd)
	defer cancel()
	c, fs, err := k.connectFleetStage(ctx, firstArg(args))
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var list kargo.StageList
	if err := c.List(ctx, &list, client.InNamespace(fs.Namespace), client.MatchingLabels{
		fleetv1alpha1.FleetStageLabel: fs.Name, fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ids := make([]string, 0, len(list.Items))
	for i := range list.Items {
		ids = append(ids, list.Items[i].Labels[fleetv1alpha1.TargetLabel])
	}
	slices.Sort(ids)
	return withPrefix(ids, toComplete), cobra.ShellCompDirectiveNoFileComp
}
