# METADATA
# title: The image's TPM2 enrolment seals the root's key to PCR 7
# description: >-
#   A LUKS key sealed to a TPM2 is only as good as the PCRs its policy reads. PCR 7 holds the
#   Secure Boot policy (the SecureBoot variable, PK, KEK, db, dbx and the authority each boot
#   binary was verified with), so a key sealed to it stops unsealing when Secure Boot is turned
#   off or another signer's boot chain runs. gpuhost reads, for the root's LUKS volume, each
#   systemd-tpm2 token of the header (tpm2-pcrs and tpm2_pubkey_pcrs), the PCRs the image's
#   first boot will seal to (TPM2_PCRS in /etc/gpuhost/luks-enroll.conf, which the gpuhost-rootfs
#   builder writes), and any tpm2-pcrs= in /etc/crypttab. Each that leaves out PCR 7 fails,
#   named. A root not sealed to a TPM2 at all is for GH-ENC-001 and GH-ENC-004 to judge, and this
#   check skips it. GH-SB-007 judges the same on a booted host.
# scope: package
# custom:
#   id: GH-SB-003
#   severity: medium
#   location: /etc/gpuhost/luks-enroll.conf
#   remediation: >-
#     Seal to PCR 7: set encryption { tpm2_pcrs = [7] } on the gpuhost-rootfs builder (its
#     default), or re-enrol with systemd-cryptenroll --wipe-slot=tpm2 --tpm2-device=auto
#     --tpm2-pcrs=7 DEVICE, and list 7 in any tpm2-pcrs= of /etc/crypttab.
#   controls:
#     nist-800-53: [SC-28, SI-7(9)]
#   targets: [rootfs, image, facts]
#   requires: [encryption]
package gpuhost.sb.tpm2_pcr7

import data.gpuhost.sb.tpm2

skip contains tpm2.none_bound

error contains msg if some msg in tpm2.unreadable

deny contains finding if some finding in tpm2.missing_7
