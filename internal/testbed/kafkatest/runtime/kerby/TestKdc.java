// A Kerberos KDC for checkpointd's tests, on Apache Kerby's SimpleKdcServer. It runs two
// KDCs of one realm on loopback TCP ports and writes their keytabs into the work dir,
// prints READY and serves until it is killed:
//
//   - the KDC, which does not require pre-authentication (as MIT's KDC for a principal
//     without +requires_preauth). Go's gokrb5 cannot pre-authenticate a password login
//     against Kerby: it salts the password key with the client name of the KDC's
//     PREAUTH_REQUIRED error, which Kerby leaves out (RFC 4120 makes it optional);
//   - the skewed KDC, which allows no clock skew at all: it issues a client its ticket
//     granting ticket, then refuses the timestamp of the client's request for a service
//     ticket with KRB_AP_ERR_SKEW, as a KDC refuses a client whose clock is off by more
//     than its allowance. (With pre-authentication Kerby would refuse the first
//     timestamp already, but as KDC_ERR_PREAUTH_FAILED, which does not say why.)
//
//   - the rekeyed KDC, whose key of the broker's principal is not the one in the
//     broker's keytab, as after a rotation the broker missed: the broker cannot open
//     the service tickets it issues.
//
// Usage: java -cp <kerby jars> TestKdc.java WORKDIR REALM PORT SKEWED_PORT REKEYED_PORT PASSWORD_USER PASSWORD
import java.io.File;
import org.apache.kerby.kerberos.kerb.request.KrbIdentity;
import org.apache.kerby.kerberos.kerb.server.KdcConfigKey;
import org.apache.kerby.kerberos.kerb.server.SimpleKdcServer;
import org.apache.kerby.kerberos.kerb.type.KerberosTime;

public class TestKdc {
    public static void main(String[] args) throws Exception {
        File dir = new File(args[0]);
        String realm = args[1];
        int port = Integer.parseInt(args[2]), skewedPort = Integer.parseInt(args[3]), rekeyedPort = Integer.parseInt(args[4]);
        String passwordUser = args[5], password = args[6];

        SimpleKdcServer kdc = kdc(new File(dir, "kdc"), realm, port, false, 300);
        kdc.createPrincipal(passwordUser, password);
        kdc.createAndExportPrincipals(new File(dir, "broker.keytab"), "kafka/localhost");
        kdc.createAndExportPrincipals(new File(dir, "client.keytab"), "checkpointd-keytab");
        // A keytab whose key the KDC no longer has, as after a key rotation.
        kdc.createAndExportPrincipals(new File(dir, "stale.keytab"), "checkpointd-stale");
        kdc.getKadmin().updateKeys("checkpointd-stale@" + realm);
        // A principal that expired an hour ago, with the same password.
        kdc.createPrincipal("checkpointd-expired", password);
        KrbIdentity expired = kdc.getIdentityService().getIdentity("checkpointd-expired@" + realm);
        expired.setExpireTime(new KerberosTime(System.currentTimeMillis() - 3600_000L));
        kdc.getIdentityService().updateIdentity(expired);
        kdc.start();

        // Made after the first has started: Kerby takes the port when a server starts.
        // It knows the broker's principal so that a service ticket request gets as far
        // as the timestamp check.
        SimpleKdcServer skewed = kdc(new File(dir, "kdc-skewed"), realm, skewedPort, false, 0);
        skewed.createAndExportPrincipals(new File(dir, "skewed.keytab"), "checkpointd-keytab");
        skewed.createPrincipal("kafka/localhost");
        skewed.start();

        SimpleKdcServer rekeyed = kdc(new File(dir, "kdc-rekeyed"), realm, rekeyedPort, false, 300);
        rekeyed.createAndExportPrincipals(new File(dir, "rekeyed.keytab"), "checkpointd-keytab");
        rekeyed.createPrincipal("kafka/localhost");
        rekeyed.start();
        System.out.println("READY");
        System.out.flush();
        Thread.currentThread().join();
    }

    static SimpleKdcServer kdc(File dir, String realm, int port, boolean preauth, long skewSeconds) throws Exception {
        dir.mkdirs();
        SimpleKdcServer kdc = new SimpleKdcServer();
        kdc.setWorkDir(dir);
        kdc.setKdcHost("127.0.0.1");
        kdc.setKdcRealm(realm);
        kdc.setKdcTcpPort(port);
        kdc.setAllowUdp(false);
        kdc.setAllowTcp(true);
        kdc.getKdcConfig().setBoolean(KdcConfigKey.PREAUTH_REQUIRED, preauth);
        kdc.getKdcConfig().setLong(KdcConfigKey.ALLOWABLE_CLOCKSKEW, skewSeconds);
        // The AES types MIT and Active Directory use; Kerby's default list starts with
        // des3-cbc-sha1-kd, which Java 17 and gokrb5 disable by default.
        kdc.getKdcConfig().setString(KdcConfigKey.ENCRYPTION_TYPES, "aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96");
        kdc.init();
        return kdc;
    }
}
