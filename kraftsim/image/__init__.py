"""kraftsim.image: metadata images, deltas, digests, diffs and the image writer.

    from kraftsim.image import MetadataDelta, MetadataImage, write_image, image_digest

    delta = MetadataDelta(MetadataImage())          # or any base image
    for entry in entries: delta.replay(entry)       # LogEntry or Payload
    image = delta.apply(provenance)                 # untouched components are reused
    records = write_image(image, "3.9-IV0", catalog, loss_handler=LossReport())

Modules, one purpose each:
  pmap         persistent hash map (structure sharing, batched updates, structural diff)
  intern       shared tuples and Uuids for per-partition compactness
  provenance   MetadataProvenance
  features, cluster, topics (+ partition), configs, quotas, producer_ids, acls, scram,
  tokens, opaque
               one image component and its delta each
  image        MetadataImage
  delta        MetadataDelta: replay dispatch, finish_snapshot, apply
  bulk         replay_all's fast path for snapshot loads (topic and partition records)
  digest       order-independent digests
  diff         structural diff with one-line texts
  loss         Loss, LossReport, the default (raising) loss handler
  writer       write_image: an image as snapshot records at a metadata.version
"""

from kraftsim.image.acls import AclsImage, StandardAcl
from kraftsim.image.cluster import BrokerRegistration, ClusterImage, ControllerRegistration, Endpoint, FeatureRange
from kraftsim.image.configs import ConfigurationsImage
from kraftsim.image.delta import MetadataDelta, image_from_records
from kraftsim.image.diff import Change, diff_images, diff_text
from kraftsim.image.digest import component_digests, image_digest, image_digest_with_provenance
from kraftsim.image.errors import (
    ImageError,
    MetadataReplayError,
    UnsupportedMetadataVersionError,
    UnwritableMetadataException,
)
from kraftsim.image.features import FeaturesImage
from kraftsim.image.image import EMPTY_IMAGE, MetadataImage
from kraftsim.image.loss import Loss, LossReport, raise_on_loss
from kraftsim.image.opaque import OpaqueImage, OpaqueRecord
from kraftsim.image.partition import PartitionRegistration
from kraftsim.image.pmap import PMap
from kraftsim.image.producer_ids import ProducerIdsImage
from kraftsim.image.provenance import EMPTY_PROVENANCE, MetadataProvenance
from kraftsim.image.quotas import ClientQuotasImage
from kraftsim.image.scram import ScramCredential, ScramImage
from kraftsim.image.tokens import DelegationToken, DelegationTokensImage
from kraftsim.image.topics import TopicImage, TopicsImage
from kraftsim.image.writer import WRITER_3X, WRITER_4X, WriterLine, iter_image_records, write_image

__all__ = [
    "AclsImage", "BrokerRegistration", "Change", "ClientQuotasImage", "ClusterImage", "ConfigurationsImage",
    "ControllerRegistration", "DelegationToken", "DelegationTokensImage", "EMPTY_IMAGE", "EMPTY_PROVENANCE",
    "Endpoint", "FeatureRange", "FeaturesImage", "ImageError", "Loss", "LossReport", "MetadataDelta",
    "MetadataImage", "MetadataProvenance", "MetadataReplayError", "OpaqueImage", "OpaqueRecord", "PMap",
    "PartitionRegistration", "ProducerIdsImage", "ScramCredential", "ScramImage", "StandardAcl", "TopicImage",
    "TopicsImage", "UnsupportedMetadataVersionError", "UnwritableMetadataException", "WRITER_3X", "WRITER_4X",
    "WriterLine", "component_digests", "diff_images", "diff_text", "image_digest", "image_digest_with_provenance",
    "image_from_records", "iter_image_records", "raise_on_loss", "write_image",
]
