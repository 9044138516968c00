package bootstrap_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509/pkix"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate/csr"
	"k8s.io/client-go/util/keyutil"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/bootstrap"
)

var _ = Describe("a Machine's kubelet joining with its bootstrap token", Ordered, func() {
	const nodeName = "joiner-1"
	var (
		m            *v1beta1.Machine
		token        bootstrap.Token
		bootstrapCfg *rest.Config
	)

	BeforeAll(func() {
		for _, b := range bootstrap.ClusterRoleBindings() {
			Expect(k8s.Create(ctx, &b)).To(Succeed())
		}
		m = &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "joiner", UID: types.UID(uuid.NewUUID())}}
	})

	It("mints one token per Machine and finds it again", func() {
		var err error
		token, err = bootstrap.EnsureToken(ctx, k8s, m, bootstrap.TokenOptions{})
		Expect(err).NotTo(HaveOccurred())
		again, err := bootstrap.EnsureToken(ctx, k8s, m, bootstrap.TokenOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(again).To(Equal(token))
	})

	It("authenticates with the bootstrap kubeconfig as a bootstrapper of the machineapi group", func() {
		data, err := bootstrap.Kubeconfig(bootstrap.KubeconfigOptions{Server: cfg.Host, CAData: cfg.CAData, Token: token})
		Expect(err).NotTo(HaveOccurred())
		bootstrapCfg, err = clientcmd.RESTConfigFromKubeConfig(data)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			user := whoAmI(g, bootstrapCfg)
			g.Expect(user.Username).To(Equal("system:bootstrap:" + token.ID))
			g.Expect(user.Groups).To(ContainElements("system:bootstrappers", bootstrap.TokenGroup))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	var nodeCfg *rest.Config
	It("gets a node client certificate that kube-controller-manager approves and signs", func() {
		nodeCfg = requestNodeCertificate(bootstrapCfg, nodeName)
		// The API server trusts the signing CA once it has reloaded its client CA file.
		Eventually(func(g Gomega) {
			user := whoAmI(g, nodeCfg)
			g.Expect(user.Username).To(Equal("system:node:" + nodeName))
			g.Expect(user.Groups).To(ContainElement("system:nodes"))
		}).WithTimeout(90 * time.Second).Should(Succeed())
	})

	It("renews the certificate as the Node itself", func() {
		renewed := requestNodeCertificate(nodeCfg, nodeName)
		Expect(whoAmI(Default, renewed).Username).To(Equal("system:node:" + nodeName))
	})

	It("stops authenticating once the Machine's tokens are revoked", func() {
		Expect(bootstrap.RevokeTokens(ctx, k8s, m.UID)).To(Succeed())
		_, found, err := bootstrap.FindToken(ctx, k8s, m.UID)
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeFalse())
		Eventually(func() error {
			cs := kubernetes.NewForConfigOrDie(bootstrapCfg)
			_, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			return err
		}).WithTimeout(30 * time.Second).Should(MatchError(ContainSubstring("Unauthorized")))
	})
})

func whoAmI(g Gomega, cfg *rest.Config) authenticationv1.UserInfo {
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return review.Status.UserInfo
}

// requestNodeCertificate does what a kubelet does with its bootstrap (or current) credentials:
// a CSR for system:node:<name> to the kubelet client signer, then waits for the certificate.
func requestNodeCertificate(as *rest.Config, nodeName string) *rest.Config {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	csrPEM, err := cert.MakeCSR(key, &pkix.Name{CommonName: "system:node:" + nodeName, Organization: []string{"system:nodes"}}, nil, nil)
	Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(as)
	Expect(err).NotTo(HaveOccurred())
	name, uid, err := csr.RequestCertificateWithContext(ctx, cs, csrPEM, "", certificatesv1.KubeAPIServerClientKubeletSignerName, nil,
		[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}, key)
	Expect(err).NotTo(HaveOccurred())
	waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	certPEM, err := csr.WaitForCertificate(waitCtx, cs, name, uid)
	Expect(err).NotTo(HaveOccurred(), "kube-controller-manager did not approve and sign CSR %s", name)
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	Expect(err).NotTo(HaveOccurred())
	out := rest.AnonymousClientConfig(as)
	out.CertData, out.KeyData = certPEM, keyPEM
	return out
}
