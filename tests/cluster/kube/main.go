// Command kube is the cluster tests' Kubernetes: one binary that runs as kube-apiserver,
// kube-controller-manager, kube-scheduler, kubelet or kubectl, chosen by its first argument or
// by the name it is called by, as hyperkube did. One binary means the packages the
// five commands share compile and link once. A sixth command, trace-sink (tracesink.go), keeps
// the API server's spans of its calls to webhooks, with the OTLP and gRPC modules the API
// server's own tracing already links.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	_ "time/tzdata" // CronJob time zones, as the upstream commands import it

	"github.com/spf13/cobra"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

var commands = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
	"kubelet":                 func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) },
}

func main() {
	name := filepath.Base(os.Args[0])
	args := os.Args[1:]
	if !known(name) && len(args) > 0 {
		name, args = args[0], args[1:]
	}
	// Every upstream main reads os.Args: make it what the chosen command's own binary would see.
	os.Args = append([]string{name}, args...)
	switch {
	case name == "trace-sink":
		os.Exit(traceSink(args))
	case name == "kubectl":
		logs.GlogSetter(kubectl.GetLogVerbosity(os.Args)) // nolint:errcheck
		if err := cli.RunNoErrOutput(kubectl.NewDefaultKubectlCommand()); err != nil {
			kubectlutil.CheckErr(err)
		}
	case commands[name] != nil:
		os.Exit(cli.Run(commands[name]()))
	default:
		fmt.Fprintf(os.Stderr, "usage: kube {%s} [flags]\n", strings.Join(names(), "|"))
		os.Exit(2)
	}
}

func known(name string) bool {
	return name == "kubectl" || name == "trace-sink" || commands[name] != nil
}

func names() []string {
	out := []string{"kubectl", "trace-sink"}
	for n := range commands {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
