/etc/ripe-cidr-collector/config.json
/etc/ripe-cidr-collector/ripe.db.snapshot
/etc/ripe-cidr-mark.nft
