package steps

// RBAC the step server and the token minter need, generated into the chart's
// ClusterRole (make generate). The server reads the calling Promotion, its
// Stage, the FleetStage and the Freight, and records intent on FleetRollouts;
// the minter keeps one token Secret per Project and reads the signing key.
//
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update;delete
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=promotions;stages;freights,verbs=get;list;watch
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=promotions,verbs=patch
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetstages;fleetrollouts,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetrollouts,verbs=create;patch
