package serve

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Credentials are what a server reachable beyond loopback is served with: a
// certificate of its own, which its kubeconfig trusts, and a bearer token
// every request must carry. Neither is stored: a server started again has
// new ones, and writes them into its kubeconfig again.
type Credentials struct {
	Certificate tls.Certificate
	// CAData is the certificate in PEM, the kubeconfig's
	// certificate-authority-data.
	CAData []byte
	// Token is the bearer token, 256 random bits.
	Token string
}

// NewCredentials makes a self-signed ECDSA P-256 certificate for hosts (IP
// addresses or DNS names: its subject alternative names), valid from now
// for validFor, and a random bearer token.
func NewCredentials(hosts []string, now time.Time, validFor time.Duration) (*Credentials, error) {
	if len(hosts) == 0 {
		return nil, fmt.Errorf("a certificate needs at least one host name or address")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate a key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generate a serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "podtrace serve", Organization: []string{"podtrace"}},
		NotBefore:    now.Add(-time.Minute), // a client's clock a little behind
		NotAfter:     now.Add(validFor),
		// Its own CA: the kubeconfig trusts this certificate and no other.
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("make a certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		return nil, fmt.Errorf("generate a token: %w", err)
	}
	return &Credentials{
		Certificate: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		CAData:      pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Token:       base64.RawURLEncoding.EncodeToString(token),
	}, nil
}

// TLSConfig is the server's TLS configuration with the certificate.
func (c *Credentials) TLSConfig() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{c.Certificate}, MinVersion: tls.VersionTLS12}
}

// RequireToken answers a request that does not carry the token as
// "Authorization: Bearer TOKEN" with a 401 Status, and hands the others to
// h.
func RequireToken(h http.Handler, token string) http.Handler {
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="podtrace serve"`)
			writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized,
				"Unauthorized: this recording is served with a bearer token; use the kubeconfig podtrace serve wrote", nil)
			return
		}
		h.ServeHTTP(w, r)
	})
}
