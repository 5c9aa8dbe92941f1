"""The reading half of ribbon.lake, below both ribbon.lake and ribbon.spark so that each can
import it and neither imports the other's package back: :mod:`.table` (tables, their files,
the facts an index records of each) and :mod:`.index` (LakeIndex, load_index,
candidate_files). Users reach every name through ``ribbon.lake``."""
