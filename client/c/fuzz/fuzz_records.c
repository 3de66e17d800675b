/* libFuzzer target of the C client's decoders: a relay message split into records, each
 * decoded as the session decodes it (protobuf-c into the arena; packed frames by the
 * unpacker, its player count from the first byte). Nothing may crash, leak, read out of
 * bounds or loop; a refusal must say why. `make native-fuzz` runs it. */
#include <protobuf-c/protobuf-c.h>
#include <stdlib.h>
#include <string.h>

#include "tickrelay/v1/tickrelay.pb-c.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	if (size < 1) return 0;
	/* Any bytes as text the relay must decode: valid UTF-8, within the bound, a prefix. */
	char text[4097];
	size_t limit = data[0] % 64;
	size_t tn = tr_cut_text((const char *)data, size > 4096 ? 4096 : size, limit, text);
	if (tn > limit || text[tn] != 0) abort();
	for (size_t i = 0; i < tn;) {
		uint8_t c = (uint8_t)text[i];
		size_t k = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
		if (k == 0 || i + k > tn) abort();
		for (size_t j = 1; j < k; j++)
			if (((uint8_t)text[i + j] & 0xc0) != 0x80) abort();
		i += k;
	}
	static tr_unpacker u; /* large: not on the fuzzer's stack */
	tr_unpacker_start(&u, (uint32_t)data[0] % 8 + 1);
	data++;
	size--;
	tr_arena arena = {0};
	ProtobufCAllocator alloc = {tr_arena_alloc, tr_arena_free, &arena};
	tr_cmdbuf cmds = {0};
	char err[256];
	for (size_t pos = 0; pos < size;) {
		size_t n, body;
		uint32_t field;
		err[0] = 0;
		if (tr_record(data + pos, size - pos, &n, &body, &field, err, sizeof err) != 0) {
			if (!err[0]) abort(); /* a refusal says why */
			break;
		}
		if (n > size - pos || body > n) abort();
		if (field == TICKRELAY__V1__SERVER_MESSAGE__MSG_PACKED) {
			uint64_t tick;
			int rc = tr_unpack(&u, data + pos + body, n - body, &cmds, &tick, err, sizeof err);
			if (rc == 0) {
				for (size_t i = 0; i < cmds.len; i++) {
					const tr_command *c = &cmds.v[i];
					if (c->player == 0 || c->player > u.players) abort();
					if (c->payload < data + pos + body || c->payload + c->payload_len > data + pos + n) abort();
					if (i > 0 && (cmds.v[i - 1].player > c->player ||
					              (cmds.v[i - 1].player == c->player && cmds.v[i - 1].seq >= c->seq)))
						abort();
				}
			} else if (rc == -1 && !err[0]) {
				abort();
			}
		} else {
			tr_arena_reset(&arena);
			Tickrelay__V1__ServerMessage *m = (Tickrelay__V1__ServerMessage *)protobuf_c_message_unpack(
			    &tickrelay__v1__server_message__descriptor, &alloc, n, data + pos);
			if (m && m->msg_case == TICKRELAY__V1__SERVER_MESSAGE__MSG_FRAME && m->frame) {
				tr_command c;
				for (size_t i = 0; i < m->frame->n_commands; i++) {
					c.payload = m->frame->commands[i]->payload.data;
					c.payload_len = m->frame->commands[i]->payload.len;
					for (size_t k = 0; k < c.payload_len; k++) (void)*(volatile const uint8_t *)(c.payload + k);
				}
				tr_unpacker_frame(&u, m->frame->tick, NULL, 0);
			}
			if (m && m->msg_case == TICKRELAY__V1__SERVER_MESSAGE__MSG_IDLE && m->idle) tr_unpacker_idle(&u, m->idle->through_tick);
		}
		pos += n;
	}
	tr_cmdbuf_free(&cmds);
	tr_arena_destroy(&arena);
	return 0;
}
