// Package kafkatest runs real Apache Kafka 4.1.1 clusters and MirrorMaker 2
// for tests, from jars fetched once with Maven into a cache outside the
// repository. No Docker, no mocks.
//
// A package's tests share one source and one target cluster (single-node
// KRaft, on free ports of 127.0.0.1), started on first use:
//
//	func TestMain(m *testing.M) { os.Exit(kafkatest.RunMain(m)) }
//
//	func TestSomething(t *testing.T) {
//		bed := kafkatest.Shared(t) // skips with -short; fails without Java/Maven
//		topic := kafkatest.UniqueName(t, "orders")
//		bed.Source.CreateTopic(t, topic, 2, nil)
//		bed.Source.Produce(t, topic, 0, 10)
//		mm2 := bed.StartMM2(t, kafkatest.MM2Options{Topics: topic, EmitCheckpoints: true})
//		recs := mm2.WaitReplicated(t, topic) // bed.RemoteTopic(topic) on bed.Target
//		...
//	}
//
// SharedSecure is one more cluster with a SASL_SSL listener (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512), an SSL listener requiring client certificates, for which
// ClientStores makes JKS or PKCS12 stores with keytool, an OAUTHBEARER listener
// with its OAuth server, and a GSSAPI listener with a Kerberos KDC (Apache Kerby,
// fetched like the Kafka jars) holding its principals and keytabs.
//
// SharedThreeBrokerTarget is one more bed whose target has three nodes
// (BedOptions.TargetBrokers), each a broker and a controller of one quorum, so
// that group coordinators and partition leaders are spread over three brokers;
// Cluster.StopNode, KillNode and RestartNode take one node down and back up
// while the other two keep serving.
//
// StartBed with BedOptions.FaultProxies puts a fault proxy (Shopify's
// toxiproxy v2, in-process) in front of each single-node cluster: the broker
// advertises the proxy on a second listener, so a client bootstrapping on
// Cluster.ProxiedBootstrap goes through Cluster.Faults for every connection
// (Latency, Bandwidth, BlackHole, ResetPeer, SlowClose, Heal), while the
// tests' own clients on Bootstrap see no fault.
//
// Every JVM is stopped and every directory removed when the tests end, when
// the test binary gets SIGINT or SIGTERM, and (on Linux) the kernel kills the
// JVMs if the test binary dies; a later run removes directories left behind.
package kafkatest
