package manager

import (
	ctrl "sigs.k8s.io/controller-runtime"

	fswebhook "github.com/kargo-fleet/kargo-fleet/fleetstage/webhook"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
)

// namespacePolicy returns the inventory namespaces the options allow.
func namespacePolicy(opts Options) inventory.NamespacePolicy {
	if opts.InventoryNamespaces == nil {
		return inventory.DefaultNamespacePolicy()
	}
	return inventory.NewNamespacePolicy(opts.InventoryNamespaces)
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
	return fswebhook.Options{InventoryNamespaces: namespacePolicy(opts), ControllerUsername: username}
}
