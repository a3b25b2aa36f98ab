"""The one results model every report renders."""
