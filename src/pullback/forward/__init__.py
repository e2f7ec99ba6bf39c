"""Forward mode: tangents beside the values, by source transformation (:mod:`.transform`)."""
