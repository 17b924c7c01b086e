package steptoken

// RBAC the token minter and the signing key source need, generated into the
// chart's ClusterRole (make generate). The minter keeps one token Secret per
// Project, lists FleetStages to know which Projects need one, and reads
// Project namespaces for revocations. Token Secrets have one name
// everywhere, so reads, updates and deletes are granted for that name only
// (list and watch too: the minter's cache selects the name); create cannot
// be limited to a name by RBAC. The signing key's Secret is in the
// controller's namespace: the chart grants it there with a Role, not here.
//
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create
// +kubebuilder:rbac:groups="",resources=secrets,resourceNames=kargo-fleet-step-token,verbs=get;list;watch;update;delete
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetstages,verbs=get;list;watch
