package steps

// RBAC the step server and the token minter need, generated into the chart's
// ClusterRole (make generate). The server reads the calling Promotion, its
// Stage, the FleetStage and the Freight, and records intent on FleetRollouts;
// the minter keeps one token Secret per Project and reads Project
// namespaces for revocations. Token Secrets have one name everywhere, so
// reads, updates and deletes are granted for that name only (list and watch
// too: the minter's cache selects the name); create cannot be limited to a
// name by RBAC. The signing key's Secret is in the controller's namespace:
// the chart grants it there with a Role, not here.
//
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create
// +kubebuilder:rbac:groups="",resources=secrets,resourceNames=kargo-fleet-step-token,verbs=get;list;watch;update;delete
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=promotions;stages;freights,verbs=get;list;watch
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=promotions,verbs=patch
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetstages;fleetrollouts,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetrollouts,verbs=create;patch
