package manager

import (
	ctrl "sigs.k8s.io/controller-runtime"

	fswebhook "github.com/kargo-fleet/kargo-fleet/fleetstage/webhook"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/personrights"
	"github.com/kargo-fleet/kargo-fleet/internal/stepserver"
)

// namespacePolicy returns the inventory namespaces the options allow.
func namespacePolicy(opts Options) inventory.NamespacePolicy {
	if opts.InventoryNamespaces == nil {
		return inventory.DefaultNamespacePolicy()
	}
	return inventory.NewNamespacePolicy(opts.InventoryNamespaces)
}

// secretNamespaces returns the namespaces whose Argo CD cluster Secrets the
// manager caches: the inventory namespaces, else the controller's own (where
// it may read Secrets anyway), since a cache of no namespace is a cache of
// all of them.
func secretNamespaces(opts Options) []string {
	if ns := namespacePolicy(opts).Namespaces(); len(ns) > 0 {
		return ns
	}
	if opts.StepServer != nil && opts.StepServer.SigningKeySecret.Namespace != "" {
		return []string{opts.StepServer.SigningKeySecret.Namespace}
	}
	if env, err := stepserver.OptionsFromEnv(); err == nil {
		return []string{env.SigningKeySecret.Namespace}
	}
	return []string{inventory.DefaultNamespaces[0]}
}

// inventoryReader returns the inventory reader of the reconcilers: the
// manager's cache, limited to the allowed namespaces.
func inventoryReader(mgr ctrl.Manager, opts Options) *inventory.Reader {
	return inventory.NewReader(mgr.GetClient()).WithNamespaces(namespacePolicy(opts))
}

// webhookOptions returns the admission webhooks' options.
func webhookOptions(opts Options) fswebhook.Options {
	username := opts.ControllerUsername
	if username == "" {
		username = fswebhook.DefaultControllerUsername()
	}
	return fswebhook.Options{InventoryNamespaces: namespacePolicy(opts), ControllerUsername: username,
		KargoGlobalServiceAccountNamespaces: opts.KargoGlobalServiceAccountNamespaces}
}

// personRights returns how the controller and the step server look up the
// rights of a person acting through Kargo's API server, as the webhook does.
func personRights(mgr ctrl.Manager, opts Options) *personrights.Checker {
	return fswebhook.PersonRights(mgr, webhookOptions(opts))
}
