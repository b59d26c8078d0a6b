"""AF-Retriever step 4: symbol candidates — the attribute catalog and the hard filters on it."""
