package plugin

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// env is what every command needs: clients, the namespace and where to write.
type env struct {
	flags     *genericclioptions.ConfigFlags
	streams   genericiooptions.IOStreams
	client    client.Client
	clientset kubernetes.Interface
	namespace string
}

func (e *env) init() error {
	cfg, err := e.flags.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	if e.client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if e.clientset, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	ns, _, err := e.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return err
	}
	e.namespace = ns
	return nil
}

// NewCommand returns the kubectl-machine root command.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	e := &env{flags: genericclioptions.NewConfigFlags(true), streams: streams}
	root := &cobra.Command{
		Use:           "kubectl-machine",
		Short:         "Inspect and operate " + v1beta1.GroupVersion.Group + " machines",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return e.init()
		},
	}
	e.flags.AddFlags(root.PersistentFlags())
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.AddCommand(newWhyCommand(e), newDrainPlanCommand(e), newRolloutCommand(e))
	return root
}
